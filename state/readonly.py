"""Opening the store to read it, live, by a process that may not write its directory (a member of the daemon's
`--socket-group`), and telling a damaged store from a sound one.

A daemon's latest rows are in `staminad.db-wal` until a checkpoint copies them into the file. A reader that
cannot write the directory cannot make the `-shm` index SQLite reads the WAL through; but when the daemon is
up, its `-wal` and `-shm` exist, and SQLite (3.22 on) reads them with read permission alone: the daemon gives
them to its socket group, readable, never writable (`staminad.daemon.access.share_store`). So:

- the store is always opened `mode=ro`, never `immutable=1` while a `-wal` exists: immutable ignores the WAL,
  which is how a group member once saw "schema version 0 / no sweeps" beside a running sweep;
- no `-wal` at all means no process has the store open, and the file holds every row: only then may a reader
  that cannot write the directory read it as immutable (it has nothing to miss);
- a `-wal` it cannot read through (not readable, no `-shm`) is one line, `StoreUnreadable`, saying which file
  and what to do, never a read of the file alone, which would show old data as if it were current.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from pathlib import Path

from protocol.errors import ExpectedError


class StoreUnreadable(ExpectedError):
    """The store's live rows cannot be read by this user (its -wal or -shm unreadable or missing)."""


_TRIES = 3  # a daemon starting while an immutable read opens: read it again, live


def open_readonly(db: Path, timeout: float = 30) -> sqlite3.Connection:
    """A read-only connection to the store at `db` that sees its latest committed rows (see the module's doc).
    Raises FileNotFoundError for no store, `StoreUnreadable` when the live rows cannot be read, and sqlite3's
    DatabaseError for a file that is no database (`damage` says what)."""
    if not db.exists():
        raise FileNotFoundError(f"no state database at {db}")
    for _ in range(_TRIES):
        wal = _sidecar(db, "wal")
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=timeout)
        try:
            _probe(conn)
            return conn
        except sqlite3.OperationalError as exc:
            conn.close()
            if wal.exists() or os.access(db.parent, os.W_OK):
                raise _unreadable(db, exc) from None
        # No -wal: nobody has the store open, the file holds it all. Immutable needs no -shm; if a -wal
        # appeared meanwhile (a daemon started), read it again, live.
        conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True, timeout=timeout)
        try:
            _probe(conn)
        except BaseException:
            conn.close()
            raise
        if not wal.exists():
            return conn
        conn.close()
    raise StoreUnreadable(f"cannot read the state store {db}: it was being opened by a writer; run again")


def _probe(conn: sqlite3.Connection) -> None:
    """Make SQLite open the file and its WAL now (a connect alone opens nothing)."""
    conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()


def _sidecar(db: Path, kind: str) -> Path:
    return db.with_name(f"{db.name}-{kind}")


def _unreadable(db: Path, exc: sqlite3.Error) -> StoreUnreadable:
    """Why the live store cannot be read, naming the file in the way and what to do about it."""
    for kind in ("wal", "shm"):
        side = _sidecar(db, kind)
        try:
            st = side.stat()
        except FileNotFoundError:
            if kind == "shm" and not os.access(db.parent, os.W_OK):
                return StoreUnreadable(
                    f"cannot read the live state store {db}: its -wal holds rows but there is no {side.name}, "
                    f"and {db.parent} is not writable by you to make one: read it as the daemon's user, or copy "
                    "the directory somewhere writable"
                )
            continue
        if not os.access(side, os.R_OK):
            return StoreUnreadable(
                f"cannot read the live state store {db}: {side} is not readable by you (mode "
                f"{stat.S_IMODE(st.st_mode):o}, uid {st.st_uid}, gid {st.st_gid}); restart the daemon with this "
                "staminad and --socket-group (it makes the store readable to the group), or read as its user"
            )
    return StoreUnreadable(f"cannot read the live state store {db}: {exc}")


def damage(db: Path) -> str | None:
    """What is wrong with the file at `db` in a few words (not a database, or `quick_check`'s first problem),
    '' when it is sound, None when it could not be checked (missing, or its live rows unreadable here)."""
    try:
        conn = open_readonly(db, timeout=5)
    except sqlite3.OperationalError:
        return None  # busy or unreadable: no verdict on the file
    except sqlite3.DatabaseError as exc:
        return str(exc)
    except (OSError, ExpectedError):
        return None
    with contextlib.closing(conn):
        try:
            problem = str(conn.execute("PRAGMA quick_check(1)").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            return str(exc)
    return "" if problem == "ok" else " ".join(problem.replace("*** in database main ***", "").split())


def store_error(db: Path | None, exc: BaseException) -> str:
    """One line for an error SQLite raised on the store at `db`: a damaged file is said to be damaged (and only
    then to be moved aside); a sound one is said to be sound, so nobody moves a healthy store away."""
    problem = damage(db) if db is not None else ""
    if db is not None and problem:
        return (
            f"the state store {db} is damaged ({problem}): move it aside with its -wal file (or pass another "
            f"--state-dir) and run again (`sqlite3 {db.name} .recover` salvages its rows)"
        )
    if db is not None and problem == "":
        return (
            f"the state store {db} could not be used ({exc}), though the file is sound (quick_check ok) and its "
            "data intact: keep it as it is, and report this line"
        )
    where = f" {db}" if db is not None else ""
    return (
        f"the state store{where} could not be used ({exc}); nothing says the file is damaged: keep it as it is, "
        "and report this line"
    )


__all__ = ["StoreUnreadable", "damage", "open_readonly", "store_error"]
