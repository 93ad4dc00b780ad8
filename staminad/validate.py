"""`staminad validate`: the oracle gate. The reference agent must pass every turn; every mutant must be caught.

Runs in process: the reference agent's `step` reads the same texts a sandboxed agent reads and the
reference server's logic answers through `AppTransport`, so thousands of turns take minutes. Each
scenario runs in a worker process; results are printed as a table (or JSON).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import msgspec

from staminad.bench.pack import Pack
from staminad.bench.scenario import Scenario, ScenarioParams, generate
from staminad.bench.texts import change_prompt, initial_prompt, render_spec
from staminad.reference.agent import step
from staminad.reference.mutants import MUTANT_BY_BUG, MUTANTS
from staminad.reference.server import App
from staminad.suite.generate import generate_suite
from staminad.suite.history import History, turn_history
from staminad.suite.inprocess import AppTransport
from staminad.suite.runner import run_suite


class AgentOutcome(msgspec.Struct, frozen=True, kw_only=True):
    agent: str  # "reference" or a mutant's bug
    seed: int
    turns_passed: int
    caught_at: int | None = None  # first failing turn
    exercised_at: int | None = None  # first turn that could reveal the bug
    categories: tuple[str, ...] = ()  # failure categories at the failing turn
    first_failure: str = ""


async def _validate_scenario(scenario: Scenario, language: str, agents: list[str]) -> list[AgentOutcome]:
    spec = render_spec(scenario.initial)
    memories: dict[str, dict[str, Any]] = {key: {} for key in agents}
    outcomes: dict[str, AgentOutcome] = {}
    exercised: dict[str, int] = {}
    history: History | None = None
    state = scenario.initial
    for turn in range(len(scenario.turns) + 1):
        if turn == 0:
            prompt = initial_prompt(language)
            changes: tuple[Any, ...] = ()
        else:
            changes = scenario.turns[turn - 1]
            prompt, after = change_prompt(changes, state)
            history = turn_history(history, state, changes, after)
            state = after
        suite = generate_suite(state, scenario.seed, turn, history)
        for agent in agents:
            if agent in outcomes:
                continue
            mutant = MUTANT_BY_BUG.get(agent)
            if mutant is not None and agent not in exercised and mutant.exercised(state, changes):
                exercised[agent] = turn
            memories[agent], config = step(memories[agent], prompt, spec, None if mutant is None else agent, False)
            result = await run_suite(suite, AppTransport(App(config)))
            if not result.passed:
                fails = result.failures
                outcomes[agent] = AgentOutcome(
                    agent=agent, seed=scenario.seed, turns_passed=turn, caught_at=turn,
                    exercised_at=exercised.get(agent), categories=tuple(sorted({f.category for f in fails})),
                    first_failure=f"{fails[0].name}: {fails[0].message}")
        if all(a in outcomes for a in agents):
            break
    n = len(scenario.turns) + 1
    for agent in agents:
        outcomes.setdefault(agent, AgentOutcome(agent=agent, seed=scenario.seed, turns_passed=n,
                                                exercised_at=exercised.get(agent)))
    return [outcomes[a] for a in agents]


def _worker(args: tuple[bytes, str, list[str]]) -> list[AgentOutcome]:
    data, language, agents = args
    scenario = msgspec.json.decode(data, type=Scenario)
    return asyncio.run(_validate_scenario(scenario, language, agents))


def validate(scenarios: Iterable[Scenario], language: str, agents: list[str], jobs: int) -> list[AgentOutcome]:
    work = [(msgspec.json.encode(s), language, agents) for s in scenarios]
    if jobs <= 1:
        return [o for w in work for o in _worker(w)]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return [o for batch in pool.map(_worker, work) for o in batch]


def scenarios_for(seeds: list[int], params: ScenarioParams, pack: Pack | None) -> list[Scenario]:
    if pack is not None:
        return [pack.scenario(s) for s in seeds]
    return [generate(s, params) for s in seeds]


ALL_AGENTS = ["reference", *(m.bug for m in MUTANTS)]


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    agent: str
    ok: bool
    summary: str
    scenarios: int
    caught: int
    exercised: int
    category_ok: int
    first_caught_turn: int | None


def verdicts(outcomes: list[AgentOutcome], turns: int) -> list[Verdict]:
    """One line per agent: the reference must pass everything; each exercised mutant must be caught."""
    out = []
    for agent in dict.fromkeys(o.agent for o in outcomes):
        mine = [o for o in outcomes if o.agent == agent]
        if agent == "reference":
            passed = sum(o.caught_at is None for o in mine)
            bad = [o for o in mine if o.caught_at is not None]
            summary = f"{passed}/{len(mine)} scenarios passed all {turns + 1} turns"
            if bad:
                summary += f"; seed {bad[0].seed} failed turn {bad[0].caught_at}: {bad[0].first_failure}"
            out.append(Verdict(agent=agent, ok=not bad, summary=summary, scenarios=len(mine), caught=len(bad),
                               exercised=len(mine), category_ok=len(mine) - len(bad), first_caught_turn=None))
            continue
        expected = MUTANT_BY_BUG[agent].category
        caught = [o for o in mine if o.caught_at is not None]
        exercised = [o for o in mine if o.exercised_at is not None or o.caught_at is not None]
        missed = [o for o in exercised if o.caught_at is None]
        right = [o for o in caught if expected in o.categories]
        first = min((o.caught_at for o in caught if o.caught_at is not None), default=None)
        ok = not missed and len(right) == len(caught)
        if exercised:
            summary = (f"caught in {len(caught)}/{len(exercised)} scenarios that exercise it, first at turn {first}; "
                       f"category {expected} in {len(right)}/{len(caught)}")
        else:
            summary = "never exercised by these scenarios (not counted as missed)"
        if missed:
            summary += f"; MISSED in seed {missed[0].seed}"
        wrong = [o for o in caught if expected not in o.categories]
        if wrong:
            summary += f"; seed {wrong[0].seed} reported {', '.join(wrong[0].categories)}"
        out.append(Verdict(agent=agent, ok=ok, summary=summary, scenarios=len(mine), caught=len(caught),
                           exercised=len(exercised), category_ok=len(right), first_caught_turn=first))
    return out
