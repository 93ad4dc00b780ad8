"""What the gateway keeps and hands out: the `Limits` it enforces, each scenario's `Route` to its model's
`Upstream`, and the `Call` it records per model call (see `proxy` for how they are used)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from protocol.events import EventData
from staminad.gateway.http import Response
from staminad.gateway.pricing import Price
from staminad.gateway.usage import Usage

Sink = Callable[[EventData], None]
Recorder = Callable[["Call"], Any]  # awaitable: persists one call


@dataclass
class Limits:
    scenario_cost_cap: float | None = None
    sweep_cost_cap: float | None = None
    outage_timeout: float = 600.0  # seconds of upstream trouble one request waits out before giving up
    first_byte_timeout: float = 300.0  # seconds to the response head; past it the attempt lost its model
    stream_idle_timeout: float = 120.0  # seconds between two chunks of a stream
    backoff_start: float = 1.0
    backoff_max: float = 60.0
    concurrency: int = 8  # calls in flight at once per endpoint (the ceiling of the adaptive limit)


@dataclass(frozen=True)
class Upstream:
    """Where a route's calls go: one model's endpoint, with its key and (when the sweep names one) its price."""

    endpoint: str
    api_key: str = ""
    price: Price | None = None
    concurrency: int | None = None  # calls in flight at once the model's endpoint takes (from the sweep file)


@dataclass
class Route:
    """One scenario's way out: where its calls go, what they cost so far, what went wrong."""

    token: str
    sweep: str
    scenario_id: int
    attempt_id: int | None = None
    turn: int = 0
    spent: float = 0.0
    waited: float = 0.0  # seconds of upstream trouble waited out (or queued) during the current attempt
    unavailable: str = ""  # why the current attempt lost its model (set once, taken by the engine)
    exhausted: str = ""  # the upstream's words when a call of the current attempt was over the context window
    oversized: dict[bytes, Response] = field(default_factory=dict)  # digest of a refused request -> the refusal
    capped: str = ""
    refused: int = 0  # requests for anything but model inference, never forwarded
    upstream: Upstream | None = None  # its model's endpoint; None: the gateway's own


@dataclass
class Call:
    """One model call as the store records it."""

    sweep: str
    scenario_id: int
    attempt_id: int | None
    turn: int
    api: str
    model: str
    usage: Usage
    cost: float
    status: int
    seconds: float
    waited: float
    streamed: bool
    estimated: bool = False  # the provider reported no usage: tokens counted from bytes
    unpriced: bool = False  # no price for its model: `cost` is 0 but unknown, and every view says so
    abandoned: bool = False  # the upstream got it but nobody saw it through (no answer in time, cut, cancelled)
    compaction: bool = False  # the harness summarised its context with this call (COMPACTION_HEADER)


__all__ = ["Call", "Limits", "Recorder", "Route", "Sink", "Upstream"]
