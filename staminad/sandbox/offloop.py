"""A sandbox's quick file work (stats, small reads and writes, mkdirs, signals) off the event loop.

Hundreds of scenarios each touch their control files several times an attempt; made on the loop, those
system calls (and the GIL each one gives up and must take back) held every other scenario and the control
socket. `quick` runs them in worker threads under a limiter of their own, so they never queue behind the
long waits (a server's exit, a fork and its child's start) that share anyio's default pool of threads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

T = TypeVar("T")
THREADS = 16  # quick file operations at once (each takes microseconds to a millisecond)

_limiter: RunVar[anyio.CapacityLimiter] = RunVar("sandbox_quick_files")


def _quick_limiter() -> anyio.CapacityLimiter:
    try:
        return _limiter.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(THREADS)
        _limiter.set(limiter)
        return limiter


async def quick(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)`, a quick blocking file operation, in a worker thread of the sandboxes' own limiter."""
    return await anyio.to_thread.run_sync(fn, *args, limiter=_quick_limiter())
