"""Blocking work off the event loop that a cancel can still stop: the suite's requests run this way.

`run_in_thread(fn, interrupt)` runs `fn` in a worker thread of its own and returns its result. When the
awaiting task is cancelled, `interrupt` is called (it must make `fn` return soon, e.g. by shutting its
socket down) and the cancel is let through only once `fn` has returned, bounded by `grace` seconds, so
the caller never closes or reuses what the thread still holds. A cancel that comes before the thread
started means `fn` never runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

T = TypeVar("T")

GRACE = 30.0  # seconds: an interrupted request ends at once; one that cannot be interrupted within its own budget


class _NotStarted(Exception):
    """The call was stopped before its thread ran it (its result is never read)."""


class _Call:
    """One call's thread side: runs once unless stopped first, and says when it has let go."""

    def __init__(self, fn: Callable[[], T], interrupt: Callable[[], None]) -> None:
        self.fn, self.interrupt = fn, interrupt
        self.finished = threading.Event()
        self._lock = threading.Lock()  # a cancel sees the call either not begun or running
        self._began = False
        self._stopped = False

    def run(self) -> object:
        try:
            with self._lock:
                if self._stopped:
                    raise _NotStarted
                self._began = True
            return self.fn()
        finally:
            self.finished.set()

    def stop(self) -> bool:
        """Interrupt the call; whether it is still running (so the caller must wait for it)."""
        with self._lock:
            self._stopped = True
            running = self._began and not self.finished.is_set()
        if running:
            self.interrupt()
        return running


async def run_in_thread(fn: Callable[[], T], interrupt: Callable[[], None], grace: float = GRACE) -> T:
    """`fn()` in a worker thread; a cancel interrupts it and waits (bounded) until the thread has let go."""
    call = _Call(fn, interrupt)
    try:
        # A limiter of its own: how many run at once is the scheduler's business, not a thread pool's.
        result = await anyio.to_thread.run_sync(call.run, abandon_on_cancel=True, limiter=anyio.CapacityLimiter(1))
    except BaseException:
        if call.stop():
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(call.finished.wait, grace, limiter=anyio.CapacityLimiter(1))
        raise
    return result  # type: ignore[return-value]  # call.run returns fn's result
