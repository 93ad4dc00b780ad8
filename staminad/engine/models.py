"""Models as a matrix axis: what a sweep file says about each model, and which harness can speak to which.

A sweep's `[llm]` names its models either the old way (one `endpoint` and one `model`), or as a list
(`[[llm.models]]`): each model with its endpoint, the wire protocols that endpoint serves, the environment
variable its key is read from, its price, context window (and the share of it at which harnesses compact)
and a concurrency limit. Every configuration runs
one agent on one model, over the same scenarios as every other, so results pair across models too.

A harness speaks exactly one protocol (`staminad.agents.harnesses.Harness.protocol`); a model that does not
serve it is refused before the sweep starts, in one line (`protocol_refusal`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

import msgspec

from staminad.gateway.pricing import Price

if TYPE_CHECKING:
    from staminad.engine.config import LLMSettings

WireProtocol = Literal["openai-chat", "openai-responses", "anthropic-messages"]
PROTOCOLS: tuple[WireProtocol, ...] = get_args(WireProtocol)
# The path below an endpoint's base URL (`.../v1`) each protocol is served at.
PROTOCOL_PATHS: dict[WireProtocol, str] = {
    "openai-chat": "chat/completions",
    "openai-responses": "responses",
    "anthropic-messages": "messages",
}


class ModelSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One model of the sweep: where it is served, how, at what price and how many calls at once."""

    name: str  # the model id the endpoint serves (vLLM's --served-model-name); a column of the grid
    endpoint: str  # base URL, such as http://127.0.0.1:8000/v1
    protocols: list[WireProtocol] = msgspec.field(default_factory=lambda: ["openai-chat"])
    api_key_env: str = ""  # "" sends no key (a local server); else read from the daemon's environment
    price: Price | None = None  # US dollars per million tokens; None: the [llm.pricing] table, if it names it
    context_window: int | None = None  # tokens; given to every harness that has such a setting
    compact_at: float | None = None  # the share of the window at which harnesses compact (None: 0.8)
    concurrency: int | None = None  # calls in flight at once to this model's endpoint (the gateway's limit)


def sweep_models(llm: LLMSettings | None) -> list[ModelSpec]:
    """The sweep's models; the old single-model `[llm]` is one model that may speak every protocol."""
    if llm is None:
        return []
    if llm.models:
        return list(llm.models)
    return [
        ModelSpec(
            name=llm.model,
            endpoint=llm.endpoint,
            protocols=list(PROTOCOLS),
            api_key_env=llm.api_key_env,
            context_window=llm.context_window,
            compact_at=llm.compact_at,
        )
    ]


def check_models(llm: LLMSettings) -> list[str]:
    """What is wrong with the `[llm]` table's models, one line each (empty when nothing is)."""
    if llm.models and (llm.endpoint or llm.model):
        return ["llm: give either endpoint and model (one model) or [[llm.models]], not both"]
    if not llm.models:
        if not llm.endpoint.startswith(("http://", "https://")) or not llm.model:
            return ["llm.endpoint must be an http(s) URL and llm.model a model name (or list [[llm.models]])"]
        return _limits("llm", llm.context_window, llm.compact_at)
    lines, seen = [], set()
    for i, m in enumerate(llm.models):
        where = f"llm.models[{i}]"
        if not m.name or not m.name.isprintable() or len(m.name) > 200:
            lines.append(f"{where}: name must be the model id its endpoint serves (printable, up to 200 characters)")
        elif m.name in seen:
            lines.append(f"{where}: model {m.name!r} is listed twice")
        seen.add(m.name)
        if not m.endpoint.startswith(("http://", "https://")):
            lines.append(f"{where}: endpoint must be an http(s) URL such as http://127.0.0.1:8000/v1")
        if not m.protocols or len(set(m.protocols)) != len(m.protocols):
            lines.append(f"{where}: protocols must list each of {', '.join(PROTOCOLS)} it serves, once")
        lines += _limits(where, m.context_window, m.compact_at)
        if m.concurrency is not None and not 1 <= m.concurrency <= 10_000:
            lines.append(f"{where}: concurrency must be 1..10000 calls at once")
    return lines


def _limits(where: str, window: int | None, compact_at: float | None) -> list[str]:
    lines = []
    if window is not None and window < 1:
        lines.append(f"{where}: context_window must be a positive number of tokens")
    if compact_at is not None and not 0.05 <= compact_at <= 1.0:
        lines.append(f"{where}: compact_at must be a share of the context window, 0.05..1.0")
    if compact_at is not None and window is None:
        lines.append(f"{where}: compact_at needs the model's context_window")
    return lines


def protocol_refusal(agent: str, protocol: str, model: ModelSpec) -> str:
    """The one line that refuses a harness on a model that does not serve its protocol ('' when it does)."""
    if protocol in model.protocols:
        return ""
    return (
        f"matrix.agents: {agent} speaks {protocol}, which model {model.name} ({model.endpoint}) does not serve "
        f"(it lists {', '.join(model.protocols)}): serve it there and add it to that model's protocols, "
        "or leave the pair out"
    )


__all__ = [
    "PROTOCOLS",
    "PROTOCOL_PATHS",
    "ModelSpec",
    "WireProtocol",
    "check_models",
    "protocol_refusal",
    "sweep_models",
]
