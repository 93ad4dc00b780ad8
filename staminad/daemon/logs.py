"""The daemon's own log: operator actions and every failure with its traceback, through stdlib `logging`.

Two handlers on the `staminad` logger while a daemon serves: stderr (the systemd journal) and a
rotating file `staminad.log` in the state directory, bounded to `MAX_BYTES` x (`BACKUPS` + 1). Events
stay on the bus for monitors; this log is what survives the process for a post-mortem. An operator
reads one line per sweep start (or resume) and finish, per infra failure (`log_event`) and per change
of an engine's health (`EngineHealth`). A full or read-only state disk costs the file its lines (the
journal still has them), never a traceback per line.
"""

from __future__ import annotations

import errno
import logging
import logging.handlers
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import anyio

from protocol.events import EventData, InfraFailure, SweepStarted

LOGGER = "staminad"
FILE = "staminad.log"
MAX_BYTES = 5 * 1024 * 1024
BACKUPS = 3
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

log = logging.getLogger(LOGGER)


class _FileHandler(logging.handlers.RotatingFileHandler):
    """The rotating file, dropping a line the disk refuses (full, read-only): the disk watch says so once."""

    def handleError(self, record: logging.LogRecord) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
            return
        super().handleError(record)


@contextmanager
def daemon_logging(state_dir: Path, stderr: bool = True) -> Iterator[Path]:
    """Route the `staminad` logger to the state dir's rotating file (and stderr) while the block runs."""
    path = state_dir / FILE
    handlers: list[logging.Handler] = [_FileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")]
    if stderr:
        handlers.append(logging.StreamHandler(sys.stderr))
    formatter = logging.Formatter(FORMAT)
    for handler in handlers:
        handler.setFormatter(formatter)
        log.addHandler(handler)
    previous = log.level
    log.setLevel(logging.INFO)
    try:
        yield path
    finally:
        log.setLevel(previous)
        for handler in handlers:
            log.removeHandler(handler)
            handler.close()


def log_event(sweep: str, data: EventData) -> None:
    """The operator's line for an event that deserves one (a sweep started or resumed, an infra failure)."""
    match data:
        case SweepStarted():
            log.info(
                "sweep %s started%s: %d configurations x %d scenarios, %d already finished",
                sweep,
                " (resumed)" if data.resumed else "",
                data.configurations,
                data.scenarios,
                data.finished,
            )
        case InfraFailure():
            log.warning(
                "infra failure in sweep %s, %s seed %d turn %d attempt %d (try %d): %s: %.300s",
                sweep,
                data.configuration,
                data.seed,
                data.turn,
                data.attempt,
                data.infra_try,
                data.infra_kind,
                data.detail,
            )
        case _:
            pass


class _Engine(Protocol):
    @property
    def url(self) -> str: ...
    @property
    def healthy(self) -> bool: ...
    @property
    def detail(self) -> str: ...


HEALTH_EVERY = 5.0  # seconds between two looks at the engines' health (their pings are bounded themselves)


class EngineHealth:
    """Logs one line each time an engine's health changes (and when it is first seen unhealthy)."""

    def __init__(self) -> None:
        self.known: dict[str, bool] = {}

    def look(self, engines: Sequence[_Engine]) -> None:
        for e in engines:
            before = self.known.get(e.url)
            if before is None and e.healthy:
                self.known[e.url] = True  # healthy when first seen: nothing to tell
            elif before != e.healthy:
                self.known[e.url] = e.healthy
                if e.healthy:
                    log.info("engine %s is healthy again", e.url)
                else:
                    log.warning("engine %s is not answering%s", e.url, f": {e.detail}" if e.detail else "")

    async def watch(self, engines: Callable[[], Sequence[_Engine]]) -> None:
        while True:
            self.look(engines())
            await anyio.sleep(HEALTH_EVERY)  # a periodic look, not a wait for something to happen


__all__ = ["BACKUPS", "FILE", "MAX_BYTES", "EngineHealth", "daemon_logging", "log", "log_event"]
