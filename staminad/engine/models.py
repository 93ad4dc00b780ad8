"""Models as a matrix axis: what a sweep file says about each model, and which harness can speak to which.

A sweep's `[llm]` names its models either the old way (one `endpoint` and one `model`), or as a list
(`[[llm.models]]`): each model with its endpoint, the wire protocols that endpoint serves, the environment
variable its key is read from, its price, context window (and the share of it at which harnesses compact)
and a concurrency limit. Every configuration runs
one agent on one model, over the same scenarios as every other, so results pair across models too.

What a model is on the wire is `staminad.gateway.models`'s; this module reads a sweep's `[llm]` into it.
A harness speaks exactly one protocol (`staminad.agents.harnesses.Harness.protocol`); a model that does not
serve it is refused before the sweep starts, in one line (`protocol_refusal`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from staminad.gateway.models import PROTOCOLS, ModelSpec, protocol_refusal


class LLMSettings(Protocol):
    """What this module reads of a sweep's `[llm]` (the engine's `config.LLMSettings` has these)."""

    @property
    def models(self) -> Sequence[ModelSpec]: ...
    @property
    def endpoint(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def api_key_env(self) -> str: ...
    @property
    def context_window(self) -> int | None: ...
    @property
    def compact_at(self) -> float | None: ...


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


__all__ = ["ModelSpec", "check_models", "protocol_refusal", "sweep_models"]
