"""The daemon's stop, bounded: whatever a sweep's clean-up waits on (an engine that accepts and never answers),
the process ends within its stop timeout.

On a stop the sweeps are cancelled and waited for, all together, for at most `stop_timeout` seconds; a sweep still
cleaning up then is named in one log line and left. Clean-up the daemon cannot interrupt (a shielded call into an
engine that never answers holds the task group open) is cut by `ExitTimer`: EXIT_GRACE seconds after that bound, it
logs one line and ends the process (`os._exit`). Nothing is lost by that: every step is in the store before the
next begins, detached harnesses keep running, and the next start resumes the sweeps and reaps what they left, as
after a `kill -9`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable

import anyio

from staminad.daemon.logs import log
from staminad.daemon.running import Running

STOP_TIMEOUT = 60.0  # seconds the sweeps get, all together, to stop and clean up (systemd's TimeoutStopSec is 120)
EXIT_GRACE = 10.0  # seconds after that for the rest of the stop (the store's close) before the process ends anyway
EXIT_STATUS = 1


async def wait_for_sweeps(runs: Iterable[Running], timeout: float) -> list[str]:
    """Wait up to `timeout` seconds in all for `runs` to end; the sweeps still running then."""
    runs = list(runs)
    with anyio.move_on_after(timeout):
        for run in runs:
            await run.done.wait()
    left = [run.name for run in runs if not run.done.is_set()]
    if left:
        log.warning(
            "stop: sweep %s still cleaning up after %.0f s (an engine not answering?): not waiting for it; "
            "the next start resumes it and reaps what it left",
            ", ".join(left),
            timeout,
        )
    return left


class ExitTimer:
    """Ends the process `seconds` from its start unless cancelled first (see the module)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._timer = threading.Timer(seconds, self._overdue)
        self._timer.daemon = True

    def start(self) -> ExitTimer:
        self._timer.start()
        return self

    def cancel(self) -> None:
        self._timer.cancel()

    def _overdue(self) -> None:
        log.error(
            "stop: clean-up still waiting after %.0f s (an engine not answering?): exiting now; "
            "the next start resumes the sweeps and reaps what they left",
            self.seconds,
        )
        logging.shutdown()  # the line reaches the log file and stderr before the process ends
        os._exit(EXIT_STATUS)


__all__ = ["EXIT_GRACE", "STOP_TIMEOUT", "ExitTimer", "wait_for_sweeps"]
