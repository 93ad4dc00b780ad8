"""A model as the gateway and the harnesses see it: where it is served, over which wire protocols (and the path
each is served at), its key's variable, price, context window and concurrency limit; and the one line that
refuses a harness on a model that does not serve the harness's protocol.

Sweep files name their models in `[llm]`; `staminad.engine.models` reads them into these specs.
"""

from __future__ import annotations

from typing import Literal, get_args

import msgspec

from staminad.gateway.pricing import Price

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


def protocol_refusal(agent: str, protocol: str, model: ModelSpec) -> str:
    """The one line that refuses a harness on a model that does not serve its protocol ('' when it does)."""
    if protocol in model.protocols:
        return ""
    return (
        f"matrix.agents: {agent} speaks {protocol}, which model {model.name} ({model.endpoint}) does not serve "
        f"(it lists {', '.join(model.protocols)}): serve it there and add it to that model's protocols, "
        "or leave the pair out"
    )


__all__ = ["PROTOCOLS", "PROTOCOL_PATHS", "ModelSpec", "WireProtocol", "protocol_refusal"]
