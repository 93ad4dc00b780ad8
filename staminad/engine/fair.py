"""A concurrency limit shared fairly between sweeps: a free slot goes to the waiting sweep that holds
the fewest slots (then to whoever waited longest), so a large early sweep cannot starve a later one.
An owner may also have its own cap (`caps`, a sweep's `parallel`), which holds inside the total.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio


class FairLimiter:
    def __init__(self, total: int) -> None:
        if total < 1:
            raise ValueError("a limiter needs at least one slot")
        self.total = total
        self.held: dict[str, int] = defaultdict(int)
        self.caps: dict[str, int] = {}  # per-owner limits inside the total
        self._waiting: list[tuple[int, str, anyio.Event]] = []
        self._ticket = itertools.count()

    @property
    def in_use(self) -> int:
        return sum(self.held.values())

    def waiting(self, owner: str) -> int:
        return sum(w[1] == owner for w in self._waiting)

    def _grant(self) -> None:
        while self._waiting and self.in_use < self.total:
            eligible = [w for w in self._waiting if self.held[w[1]] < self.caps.get(w[1], self.total)]
            if not eligible:
                return
            best = min(eligible, key=lambda w: (self.held[w[1]], w[0]))
            self._waiting.remove(best)
            self.held[best[1]] += 1
            best[2].set()

    @asynccontextmanager
    async def slot(self, owner: str) -> AsyncIterator[None]:
        entry = (next(self._ticket), owner, anyio.Event())
        self._waiting.append(entry)
        self._grant()
        try:
            await entry[2].wait()
        except BaseException:
            if entry in self._waiting:
                self._waiting.remove(entry)
            elif entry[2].is_set():
                self.held[owner] -= 1
                self._grant()
            raise
        try:
            yield
        finally:
            self.held[owner] -= 1
            self._grant()
