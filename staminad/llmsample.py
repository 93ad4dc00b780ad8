"""LLM-driven p0 and pi_env: a model proposes the initial design and each turn's changes as a development story.

The model answers with JSON constrained to the action space (the JSON Schema of `State` for p0, of a
list of changes for pi_env, sent as `response_format`). Every proposal is checked exactly as the
procedural samplers' output is: decoded into the typed changes, then validated and applied one by one
(`transition`), the initial design against the integrity rules. An invalid proposal is rejected and
counted, and the model is told why; after `attempts` rejections that step is drawn procedurally
(counted as a fallback). The result is a normal scenario pack, so runs replay without the model.
"""

from __future__ import annotations

import json
import random
from typing import Any

import httpx
import msgspec

from staminad.bench.changes import Change, ChangeError, transition
from staminad.bench.integrity import problems
from staminad.bench.naming import Namer
from staminad.bench.pack import Sampling
from staminad.bench.sampler import initial_state, sample_turn, weights_for
from staminad.bench.scenario import RNG_EPOCH, Scenario, ScenarioParams
from staminad.bench.schema import State
from staminad.bench.texts import render_spec

TIMEOUT = 300.0
_BATCH = msgspec.json.Decoder(list[Change])
_STATE = msgspec.json.Decoder(State)

SYSTEM = (
    "You design the evolution of a REST API product as a believable development story. You answer with "
    "JSON only, exactly matching the given JSON Schema."
)


class LLMSamplingError(RuntimeError):
    """The model endpoint could not be used at all (unreachable, refused); one line says why."""


class _Counts:
    def __init__(self) -> None:
        self.proposals = self.rejected = self.fallbacks = 0


async def _ask(
    client: httpx.AsyncClient, endpoint: str, model: str, messages: list[dict[str, str]], schema_name: str, schema: Any
) -> str:
    body = {
        "model": model,
        "messages": messages,
        "temperature": 0.7,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": schema_name, "schema": schema, "strict": False},
        },
    }
    try:
        r = await client.post(f"{endpoint.rstrip('/')}/chat/completions", json=body, timeout=TIMEOUT)
    except httpx.HTTPError as exc:
        raise LLMSamplingError(f"model endpoint {endpoint} unreachable: {type(exc).__name__}") from None
    if r.status_code != 200:
        raise LLMSamplingError(f"model endpoint answered {r.status_code}: {r.text[:200]}")
    try:
        return str(r.json()["choices"][0]["message"]["content"] or "")
    except (ValueError, KeyError, IndexError, TypeError):
        raise LLMSamplingError("model endpoint gave no chat completion message") from None


async def _initial(
    client: httpx.AsyncClient,
    endpoint: str,
    model: str,
    rng: random.Random,
    namer: Namer,
    attempts: int,
    counts: _Counts,
) -> State:
    messages = [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": "Propose the first version of a small product's REST API design: 2 to "
            "4 entities with fields, optionally enums, analytics and actions.",
        },
    ]
    for _ in range(attempts):
        counts.proposals += 1
        text = await _ask(client, endpoint, model, messages, "initial_design", msgspec.json.schema(State))
        try:
            state = _STATE.decode(text)
            found = problems(state)
            if not state.entities:
                found.append("the design has no entity")
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            found = [str(exc)]
        if not found:
            return state
        counts.rejected += 1
        messages += [
            {"role": "assistant", "content": text},
            {"role": "user", "content": f"That design is invalid: {found[0]}. Propose a corrected one."},
        ]
    counts.fallbacks += 1
    return initial_state(rng, namer)


async def _turn(
    client: httpx.AsyncClient,
    endpoint: str,
    model: str,
    state: State,
    k: int,
    turn: int,
    story: list[str],
    attempts: int,
    counts: _Counts,
) -> tuple[Change, ...] | None:
    recent = "\n".join(story[-5:]) or "(none yet)"
    messages = [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": (
                f"The current design (turn {turn - 1}):\n\n{render_spec(state)}\n\nRecent development "
                f"steps:\n{recent}\n\nPropose the next step of the story as exactly {k} changes, applied in "
                "order, each valid against the design left by the ones before it."
            ),
        },
    ]
    for _ in range(attempts):
        counts.proposals += 1
        text = await _ask(client, endpoint, model, messages, "change_batch", msgspec.json.schema(list[Change]))
        try:
            batch = tuple(_BATCH.decode(text))
            if len(batch) != k:
                raise ChangeError(f"expected exactly {k} changes, got {len(batch)}")
            transition(state, batch)
            return batch
        except (msgspec.DecodeError, msgspec.ValidationError, ChangeError) as exc:
            counts.rejected += 1
            messages += [
                {"role": "assistant", "content": text},
                {"role": "user", "content": f"Rejected: {exc}. Propose {k} valid changes instead."},
            ]
    return None


async def llm_scenario(
    seed: int,
    params: ScenarioParams,
    endpoint: str,
    model: str,
    api_key: str = "",
    attempts: int = 3,
    counts: _Counts | None = None,
) -> Scenario:
    """One scenario with p0 and pi_env proposed by the model (procedural fallback per step, counted)."""
    counts = counts or _Counts()
    rng = random.Random(f"staminabench/{RNG_EPOCH}/{seed}/{params.naming}/llm")
    namer = Namer(params.naming, rng)
    weights = weights_for("uniform", params.weights)
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx.AsyncClient(headers=headers, trust_env=False) as client:
        state = await _initial(client, endpoint, model, rng, namer, attempts, counts)
        initial, age = state, 0
        turns: list[tuple[Change, ...]] = []
        story: list[str] = []
        for t in range(1, params.turns + 1):
            batch = await _turn(client, endpoint, model, state, params.changes_per_turn, t, story, attempts, counts)
            if batch is None:
                counts.fallbacks += 1
                drawn, _ = sample_turn(state, rng, namer, weights, params.changes_per_turn, age)
                batch = tuple(drawn)
            state = transition(state, batch)
            age += len(batch)
            turns.append(batch)
            story.append(f"turn {t}: " + "; ".join(json.dumps(msgspec.to_builtins(c))[:120] for c in batch))
    return Scenario(seed=seed, initial=initial, turns=tuple(turns))


async def llm_scenarios(
    seeds: list[int], params: ScenarioParams, endpoint: str, model: str, api_key: str = "", attempts: int = 3
) -> tuple[dict[int, Scenario], Sampling]:
    counts = _Counts()
    out = {seed: await llm_scenario(seed, params, endpoint, model, api_key, attempts, counts) for seed in seeds}
    return out, Sampling(
        model=model, endpoint=endpoint, proposals=counts.proposals, rejected=counts.rejected, fallbacks=counts.fallbacks
    )


__all__ = ["LLMSamplingError", "llm_scenario", "llm_scenarios"]
