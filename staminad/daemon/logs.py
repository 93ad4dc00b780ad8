"""The daemon's own log: operator actions and every failure with its traceback, through stdlib `logging`.

Two handlers on the `staminad` logger while a daemon serves: stderr (the systemd journal) and a
rotating file `staminad.log` in the state directory, bounded to `MAX_BYTES` x (`BACKUPS` + 1). Events
stay on the bus for monitors; this log is what survives the process for a post-mortem. A full or read-only
state disk costs the file its lines (the journal still has them), never a traceback per line.
"""

from __future__ import annotations

import errno
import logging
import logging.handlers
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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


__all__ = ["BACKUPS", "FILE", "MAX_BYTES", "daemon_logging", "log"]
