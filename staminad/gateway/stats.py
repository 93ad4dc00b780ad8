"""What each serving gateway is doing, for the metrics: requests in flight and waiting out upstream trouble,
latency and time to first token, tokens, upstream errors, and spend against the sweep's cap.

A gateway enters `LIVE` while it serves and leaves when it stops, so the metrics see exactly the
gateways of running sweeps (the label set is bounded by them). Plain counters: the gateway stays free of
any metrics library; the daemon's collector turns these into series at scrape time.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field

from staminad.gateway.limit import LimiterStats

# Seconds: a local model answers a short prompt in tens of milliseconds, a long agent turn in minutes.
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


@dataclass
class Buckets:
    """A histogram's cumulative-ready counts: `counts[i]` observations fell in (bounds[i-1], bounds[i]]."""

    bounds: tuple[float, ...] = LATENCY_BUCKETS
    counts: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS) + 1))
    total: float = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def cumulative(self) -> list[tuple[str, int]]:
        """(le, count) pairs as a Prometheus histogram exposes them, +Inf last."""
        out, running = [], 0
        for bound, count in zip((*map(str, self.bounds), "+Inf"), self.counts, strict=True):
            running += count
            out.append((bound, running))
        return out


@dataclass
class EndpointStats:
    """One gateway's figures: one sweep's way to one endpoint."""

    endpoint: str
    sweep: str = ""  # known once the first route is made
    cap: float | None = None  # the sweep's cost cap, dollars
    spent: float = 0.0  # dollars, this sweep through this gateway (restored across restarts)
    in_flight: int = 0  # requests forwarded and not yet answered in full
    retrying: int = 0  # requests waiting out upstream trouble before trying again
    responses: dict[int, int] = field(default_factory=dict)  # upstream status -> answers passed on
    errors: dict[str, int] = field(default_factory=dict)  # "429", "5xx", "timeout", "unreachable", "broken"
    # Calls whose money is not exact: "estimated" (no usage reported), "unpriced" (no price), "abandoned".
    flagged: dict[str, int] = field(default_factory=dict)
    endpoints: Callable[[], list[LimiterStats]] | None = None  # each endpoint's adaptive limit, calls in flight
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    latency: Buckets = field(default_factory=Buckets)  # request in to response end
    first_token: Buckets = field(default_factory=Buckets)  # request in to the first byte of the body

    def error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1


LIVE: dict[int, EndpointStats] = {}  # id(gateway) -> its figures, while it serves


__all__ = ["LATENCY_BUCKETS", "LIVE", "Buckets", "EndpointStats"]
