"""A full or read-only state disk pauses the writes it refuses; it never fails a sweep or stops the daemon.

SQLite answers a write on a full disk with SQLITE_FULL (or SQLITE_IOERR when the kernel's ENOSPC reaches it
mid-write) and on a read-only one with SQLITE_READONLY; the OS says ENOSPC, EDQUOT or EROFS. None of these is
the store's fault or the agent's: the write is rolled back, and the writer waits here, polling the disk's free
space (at most every `POLL_MAX` seconds), until it can write again; then the same write is retried, so nothing
recorded differs from an undisturbed run. While any write waits, `DiskWatch.stall` says why, in one line, for
the status, the TUI and the viewer; `writer` (a context variable the daemon sets per sweep) says whose writes
wait, so a sweep whose writes still succeed is not shown as paused.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import time
from collections import Counter
from contextvars import ContextVar
from pathlib import Path

import anyio

log = logging.getLogger("staminad.state")

# Whose writes these are (the sweep's name, set by the daemon in the sweep's task; "" for the daemon's own).
writer: ContextVar[str] = ContextVar("staminad_writer", default="")

MIN_FREE = 1024 * 1024  # bytes free on the disk before a waiting write is tried again
POLL_MIN = 0.25  # seconds between the first polls of the disk; doubled up to POLL_MAX
POLL_MAX = 5.0
_SQLITE_FULL, _SQLITE_READONLY, _SQLITE_IOERR = 13, 8, 10
_OS_FULL = {errno.ENOSPC, errno.EDQUOT}


def disk_state(path: Path) -> tuple[int, bool]:
    """(bytes free to us, read-only) of the file system holding `path` ((0, False) if it cannot be read)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return 0, False
    return st.f_bavail * st.f_frsize, bool(st.f_flag & os.ST_RDONLY)


def disk_problem(exc: BaseException, path: Path) -> str | None:
    """Why `exc` is the disk's doing (full or read-only), in a few words, or None when it is not."""
    if isinstance(exc, OSError) and not isinstance(exc, sqlite3.Error):
        if exc.errno in _OS_FULL:
            return "disk full"
        if exc.errno == errno.EROFS:
            return "disk read-only"
        return None
    if not isinstance(exc, sqlite3.OperationalError):
        return None
    code = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
    if code == _SQLITE_FULL or "database or disk is full" in str(exc):
        return "disk full"
    if code == _SQLITE_READONLY or "readonly database" in str(exc):
        return "disk read-only"
    if code == _SQLITE_IOERR or "disk I/O error" in str(exc):  # only the disk's doing if the disk says so
        free, readonly = disk_state(path)
        if readonly:
            return "disk read-only"
        if free < MIN_FREE:
            return "disk full"
    return None


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


class DiskWatch:
    """The writes waiting for the disk holding `path` (the state directory), and why they wait."""

    def __init__(self, path: Path, min_free: int = MIN_FREE) -> None:
        self.path, self.min_free = path, min_free
        self.waiting: Counter[str] = Counter()  # writer -> writes waiting now
        self.since = 0.0  # when the current stall began (0: none)
        self.problem = ""  # "disk full" | "disk read-only" while writes wait
        self.stalls = 0  # stalls so far (each ends when every waiting write went through)

    @property
    def stall(self) -> str:
        """Why writes wait now, in one line that says what to do ("" when none wait)."""
        if not self.waiting:
            return ""
        free, _ = disk_state(self.path)
        return (
            f"state {self.problem}: {self.path} has {human_bytes(free)} free; writes to the store wait and the "
            f"work resumes by itself once space returns (free space on that disk; nothing is lost)"
        )

    def stalled(self, who: str) -> bool:
        """Whether `who`'s writes (a sweep's name) wait on the disk now."""
        return self.waiting.get(who, 0) > 0

    def ready(self) -> bool:
        free, readonly = disk_state(self.path)
        return not readonly and free >= self.min_free

    async def wait(self, problem: str) -> None:
        """Wait (polling, backing off up to `POLL_MAX` s) until the disk takes writes again; then the caller
        retries its write. The first waiter of a stall logs it, the last one out logs its end."""
        who = writer.get()
        first = not self.waiting
        if first:
            self.since, self.problem, self.stalls = time.time(), problem, self.stalls + 1
        self.waiting[who] += 1
        if first:
            log.warning("%s", self.stall)
        try:
            delay = POLL_MIN
            await anyio.sleep(delay)
            while not self.ready():
                delay = min(delay * 2, POLL_MAX)
                await anyio.sleep(delay)
        finally:
            self.waiting[who] -= 1
            if self.waiting[who] <= 0:
                del self.waiting[who]
            if not self.waiting:
                log.warning(
                    "state disk takes writes again after %.0f s: waiting writes resume", time.time() - self.since
                )
                self.since = 0.0


__all__ = ["DiskWatch", "disk_problem", "disk_state", "human_bytes", "writer"]
