"""Argument types shared by several commands; each raises a one-line error on bad input."""

from __future__ import annotations

import argparse
from pathlib import Path


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


class CommandError(Exception):
    """A command that could not do its work (no daemon, an unwritable state dir): one line, exit status 1."""


def lock_state_dir(state_dir: Path, busy: str) -> int:
    """Create `state_dir` if needed and take its lock (an open fd); `busy` is the line when another holds it.

    One process runs sweeps on a state dir at a time; a state dir that cannot be written (read-only,
    not a directory) is refused in one line naming it.
    """
    import fcntl
    import os

    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(state_dir / "staminad.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise CommandError(f"cannot use the state directory {state_dir}: {exc.strerror or exc} (make it writable, "
                           "or pass another --state-dir)") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise CommandError(busy) from None
    return fd


def check_store(db: Path) -> None:
    """Refuse, in one line, a state store that exists but is not a usable SQLite database.

    Checked synchronously before the async store opens it: a failed open there leaves aiosqlite's
    worker thread alive, and the process would hang at exit after printing its error.
    """
    import sqlite3

    if not db.exists():
        return
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            conn.execute("PRAGMA quick_check(1)").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise CommandError(f"the state store {db} cannot be used ({exc}); move it aside (or pass another "
                           "--state-dir) and run again") from None


def seed_list(text: str) -> list[int]:
    """`0-19`, `3`, or `0,4,7-9` -> a sorted list of distinct non-negative seeds."""
    seeds: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part:
                lo_s, hi_s = part.split("-", 1)
                lo, hi = int(lo_s), int(hi_s)
                if lo > hi:
                    raise argparse.ArgumentTypeError(f"seed range {part!r} is empty (start above end)")
                seeds.update(range(lo, hi + 1))
            else:
                seeds.add(int(part))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a seed list such as 0-19 or 1,4,7") from None
    if any(s < 0 for s in seeds):
        raise argparse.ArgumentTypeError("seeds must not be negative")
    if len(seeds) > 100_000:
        raise argparse.ArgumentTypeError("at most 100000 seeds")
    return sorted(seeds)


def bounded_int(lo: int, hi: int):  # type: ignore[no-untyped-def]
    """An argparse type accepting integers in [lo, hi]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} is outside {lo}..{hi}")
        return value

    return parse
