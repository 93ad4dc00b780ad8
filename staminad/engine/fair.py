"""A concurrency limit shared fairly between sweeps: a free slot goes to the waiting sweep that holds
the fewest slots (then to whoever waited longest), so a large early sweep cannot starve a later one.
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
        self._waiting: list[tuple[int, str, anyio.Event]] = []
        self._ticket = itertools.count()

    @property
    def in_use(self) -> int:
        return sum(self.held.values())

    def _grant(self) -> None:
        while self._waiting and self.in_use < self.total:
            best = min(self._waiting, key=lambda w: (self.held[w[1]], w[0]))
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
