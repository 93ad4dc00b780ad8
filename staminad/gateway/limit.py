"""How many calls one model endpoint has in flight: a FIFO queue under a limit that adapts (AIMD).

A shared local server (vLLM, SGLang on one GPU box) must not be flooded by a sweep's hundred harnesses:
each endpoint admits at most `limit` calls at once, the rest wait their turn in arrival order. The limit
starts at the configured `concurrency` (its ceiling) and adapts as TCP's window does: halved when the
endpoint says it is overloaded (429, 503, 529) and cut by a tenth when its time to first byte drifts past
twice its best, at most once per `cooldown` so a burst of refusals of one overload counts once; raised by
one per `limit` calls that went well. Time spent queued is the platform's (the gateway books it as waited,
never as the agent's turn time). `stats()` is what a metrics collector reads.
"""

from __future__ import annotations

import time
from collections import deque

import anyio
import msgspec

OVERLOAD = frozenset((429, 503, 529))
SLOW_FACTOR = 2.0  # time to first byte over this many times the best seen is congestion
BASELINE_DRIFT = 1.02  # the best time to first byte forgets slowly (a model reloaded elsewhere may be slower now)


class LimiterStats(msgspec.Struct, frozen=True, kw_only=True):
    """One endpoint's load, as a metrics collector reads it."""

    endpoint: str
    limit: int  # calls admitted at once now (adapted; never above `ceiling`, never below 1)
    ceiling: int  # the configured concurrency
    in_flight: int  # calls holding a slot: sent upstream, or relaying their answer
    queued: int  # calls waiting for a slot
    throttled: int  # overload answers (429, 503, 529) seen since the start
    queued_seconds: float  # time calls spent queued, all together


class EndpointLimiter:
    def __init__(self, endpoint: str, concurrency: int, cooldown: float = 2.0) -> None:
        self.endpoint, self.ceiling, self.cooldown = endpoint, concurrency, cooldown
        self.window = float(concurrency)
        self.in_flight = 0
        self.throttled = 0
        self.queued_seconds = 0.0
        self._waiters: deque[anyio.Event] = deque()
        self._granted: set[anyio.Event] = set()
        self._cut_at = -1e9
        self._best_ttfb: float | None = None
        self._good = 0

    @property
    def limit(self) -> int:
        return max(1, int(self.window))

    async def acquire(self) -> float:
        """Wait for a slot (first come, first served); returns the seconds spent queued."""
        if not self._waiters and self.in_flight < self.limit:
            self.in_flight += 1
            return 0.0
        t0 = time.monotonic()
        event = anyio.Event()
        self._waiters.append(event)
        try:
            await event.wait()
        except BaseException:  # cancelled while queued: leave the queue, or hand back a slot granted meanwhile
            if event in self._granted:
                self._granted.discard(event)
                self.release()
            else:
                self._waiters.remove(event)
            raise
        self._granted.discard(event)
        waited = time.monotonic() - t0
        self.queued_seconds += waited
        return waited

    def release(self) -> None:
        self.in_flight -= 1
        self._admit()

    def _admit(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            event = self._waiters.popleft()
            self.in_flight += 1
            self._granted.add(event)
            event.set()

    def answered(self, status: int, ttfb: float) -> None:
        """Adapt the limit to one answer: its status and its time to the response head."""
        now = time.monotonic()
        if status in OVERLOAD:
            self.throttled += 1
            self._cut(now, 0.5)
            return
        if self._best_ttfb is None or ttfb < self._best_ttfb:
            self._best_ttfb = ttfb
        else:
            self._best_ttfb *= BASELINE_DRIFT
        if ttfb > SLOW_FACTOR * self._best_ttfb and ttfb > 0.05:  # sub-50 ms jitter is no congestion
            self._cut(now, 0.9)
            return
        self._good += 1
        if self._good >= self.limit and self.window < self.ceiling:
            self._good = 0
            self.window = min(float(self.ceiling), self.window + 1.0)
            self._admit()

    def _cut(self, now: float, factor: float) -> None:
        if now - self._cut_at < self.cooldown:
            return
        self._cut_at, self._good = now, 0
        self.window = max(1.0, self.window * factor)

    def stats(self) -> LimiterStats:
        return LimiterStats(
            endpoint=self.endpoint,
            limit=self.limit,
            ceiling=self.ceiling,
            in_flight=self.in_flight,
            queued=len(self._waiters),
            throttled=self.throttled,
            queued_seconds=round(self.queued_seconds, 3),
        )


__all__ = ["OVERLOAD", "EndpointLimiter", "LimiterStats"]
