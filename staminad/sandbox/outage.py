"""Riding out an engine outage: one watch per engine the process's sandboxes run on, and the wait for it.

An engine that stops answering (its socket refused, its API gone for a restart or a network cut) fails every
operation of every sandbox on it at once, and within a second. Recorded as infra failures, that would spend
a scenario's whole infra retry budget before the engine had a chance to come back. Instead the scenario
asks the engine's watch whether it answers (a fresh, bounded probe) and, while it does not, waits for it
(`ride_out`): probes with jittered exponential backoff (`BACKOFF_FIRST` up to `BACKOFF_MAX`), so a hundred
waiting scenarios do not hammer a recovering engine in step, and gives up after its outage budget (the
sweep's `[run] outage_budget`), when the attempt is recorded as the platform's after all.

The watches are the process's, one per engine URL (`watch_for`), shared by every sweep that uses the
engine, so the status, the TUI and the metrics say per engine whether it is down, since when, and how many
scenarios wait for it (`down`). Nothing here names Docker: a runtime supplies the probe.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Awaitable, Callable

import anyio

log = logging.getLogger(__name__)

OUTAGE_BUDGET = 1800.0  # seconds a scenario waits out engine outages in total, by default (`[run] outage_budget`)
BACKOFF_FIRST = 0.5  # seconds before the first probe after a failed one
BACKOFF_MAX = 15.0  # the longest pause between probes of an engine that does not answer

Probe = Callable[[], Awaitable[str | None]]  # None: the engine answers; else why not, in one line


class OutageOver(RuntimeError):
    """The engine did not answer within the outage budget: the attempt is the platform's (an `engine_error`)."""


class EngineWatch:
    """One engine's reachability as the process's sandboxes see it (see the module docstring)."""

    def __init__(self, url: str, probe: Probe) -> None:
        self.url, self.probe = url, probe
        self.down_since = 0.0  # Unix time the current outage was first seen; 0 while the engine answers
        self.detail = ""  # why it does not answer (the last probe's words)
        self.waiting = 0  # scenarios paused for it now
        self.outages = 0  # outages seen since the process started
        self.down_seconds = 0.0  # seconds of the outages that ended

    @property
    def down(self) -> bool:
        return self.down_since > 0

    async def answers(self) -> bool:
        """Probe the engine now (the probe bounds itself) and record what it said."""
        why = await self.probe()
        if why is None:
            if self.down:
                lasted = time.time() - self.down_since
                self.down_seconds += lasted
                self.down_since, self.detail = 0.0, ""
                log.info("engine %s answers again after %.0f s: its scenarios resume", self.url, lasted)
            return True
        if not self.down:
            self.down_since, self.outages = time.time(), self.outages + 1
            log.warning("engine %s does not answer (%s): its scenarios pause until it does", self.url, why)
        self.detail = why
        return False

    async def ride_out(self, budget: float) -> float:
        """Wait until the engine answers, probing with jittered, growing pauses; the seconds waited. Raises
        `OutageOver` once `budget` seconds pass without an answer."""
        t0 = time.monotonic()
        delay = BACKOFF_FIRST
        self.waiting += 1
        try:
            while not await self.answers():
                left = budget - (time.monotonic() - t0)
                if left <= 0:
                    raise OutageOver(
                        f"engine {self.url} did not answer for {budget:.0f} s, the sweep's outage budget "
                        f"([run] outage_budget): {self.detail}"
                    )
                await anyio.sleep(min(left, random.uniform(delay / 2, delay)))
                delay = min(BACKOFF_MAX, delay * 2)
        finally:
            self.waiting -= 1
        return time.monotonic() - t0


_WATCHES: dict[str, EngineWatch] = {}


def watch_for(url: str, probe: Probe) -> EngineWatch:
    """The process's watch of the engine at `url`; `probe` replaces the one it had (the latest connection's)."""
    watch = _WATCHES.get(url)
    if watch is None:
        watch = _WATCHES[url] = EngineWatch(url, probe)
    else:
        watch.probe = probe
    return watch


def watches_by_url() -> dict[str, EngineWatch]:
    """Every engine watched so far in this process, by URL."""
    return dict(_WATCHES)


__all__ = ["BACKOFF_FIRST", "BACKOFF_MAX", "OUTAGE_BUDGET", "EngineWatch", "OutageOver", "watch_for", "watches_by_url"]
