"""The state directory's lock and the store's sanity check, taken before anything opens the store.

One process (a daemon or a `staminad run`) works on a state directory at a time; both take this lock.
Failures are `StateDirError`s: one line naming the directory or the file, exit status 1.
"""

from __future__ import annotations

from pathlib import Path

from protocol.errors import ExpectedError


class StateDirError(ExpectedError):
    """The state directory or its store cannot be used (busy, unwritable, corrupted, too new)."""


LOCK_NAME = "staminad.lock"


def lock_state_dir(state_dir: Path, busy: str, holder: str) -> int:
    """Create `state_dir` if needed and take its lock (an open fd); `busy` is the line when another holds it.

    One process runs sweeps on a state dir at a time; a state dir that cannot be written (read-only,
    not a directory) is refused in one line naming it. The lock file then says who holds it: the pid and
    `holder` (`daemon` or `run`), which `lock_holder` reads.
    """
    import fcntl
    import os

    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(state_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
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
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()} {holder}\n".encode())
    return fd


def lock_holder(state_dir: Path) -> tuple[int, str] | None:
    """(pid, `daemon` or `run`) of the process holding the state directory's lock; None when none holds it.

    Read from `/proc/locks` rather than by trying the lock, so asking never makes a starting daemon fail.
    """
    lock = state_dir / LOCK_NAME
    try:
        st = lock.stat()
        held = Path("/proc/locks").read_text()
        words = lock.read_text(errors="replace").split()
    except OSError:
        return None
    if not words or not words[0].isdigit():
        return None
    # A lock line: `1: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF`; matched by the holder's pid and the inode
    # (the device numbers differ between stat and the kernel's lock table on an overlay).
    for f in (line.split() for line in held.splitlines()):
        if len(f) > 5 and f[1] == "FLOCK" and f[4] == words[0] and f[5].endswith(f":{st.st_ino}"):
            return int(words[0]), words[1] if len(words) > 1 else "daemon"
    return None


def check_store(db: Path, migrating: bool = False) -> None:
    """Refuse, in one line (exit status 1), a state store that exists but cannot be used: not a SQLite
    database, damaged anywhere in the file (`quick_check`, not just its header), written by a newer staminad, or
    whose live rows this user cannot read (`state.readonly.StoreUnreadable`). A sound store is never called
    damaged, and only a damaged one is to be moved aside. A store with no tables at all (schema version 0: an
    empty file, a bare header, a copy made without its `-wal`) is refused too unless the caller is `migrating`
    it (`run`, `start`), which gives it the schema; for a read (`report`, `export`) it is no older store, so it
    is not called one.

    Every command that opens the store runs this first (`run`, `start`, `report`, `export`), so each refuses
    the same store the same way. Checked synchronously before the async store opens it: a failed open there
    leaves aiosqlite's worker thread alive, and the process would hang at exit after printing its error.
    """
    import contextlib

    from state.readonly import damage, open_readonly
    from state.schema import MIGRATIONS

    if not db.exists():
        return
    problem = damage(db)
    if problem:
        raise StateDirError(
            f"the state store {db} cannot be used: the file is damaged ({problem}); move it aside with its -wal "
            f"file (or pass another --state-dir) and run again (`sqlite3 {db.name} .recover` salvages its rows)"
        )
    with contextlib.closing(open_readonly(db, timeout=5)) as conn:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1").fetchone() is not None
    if version > len(MIGRATIONS):
        raise StateDirError(
            f"the state store {db} was written by a newer staminad (schema version {version}, this one knows "
            f"{len(MIGRATIONS)}): upgrade staminad, or pass another --state-dir"
        )
    if version == 0 and not tables and not migrating:
        raise StateDirError(
            f"the state store {db} is empty or truncated (no tables; a copy made without its -wal file?): "
            "copy it again with its -wal file, or pass another --state-dir"
        )


__all__ = ["LOCK_NAME", "StateDirError", "check_store", "lock_holder", "lock_state_dir"]
