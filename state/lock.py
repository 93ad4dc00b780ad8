"""The state directory's lock and the store's sanity check, taken before anything opens the store.

One process (a daemon or a `staminad run`) works on a state directory at a time; both take this lock.
Failures are `StateDirError`s: one line naming the directory or the file, exit status 1.
"""

from __future__ import annotations

from pathlib import Path

from protocol.errors import ExpectedError


class StateDirError(ExpectedError):
    """The state directory or its store cannot be used (busy, unwritable, corrupted)."""


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
        raise StateDirError(
            f"cannot use the state directory {state_dir}: {exc.strerror or exc} (make it writable, "
            "or pass another --state-dir)"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StateDirError(busy) from None
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
        raise StateDirError(
            f"the state store {db} cannot be used ({exc}); move it aside (or pass another --state-dir) and run again"
        ) from None


__all__ = ["StateDirError", "check_store", "lock_state_dir"]
