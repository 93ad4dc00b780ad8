"""Giving the store its schema: each migration, the first-time creation included, is one transaction with its
schema version bump inside it, so a process killed at any point leaves the store at one version or the next,
never between.

Runs on a plain sqlite3 connection of its own in autocommit mode (`isolation_level=None`), so nothing commits
behind our back: `executescript` would COMMIT first and then run each statement in a transaction of its own,
which is how a kill used to leave a migration half done and the store refusing every later start ("duplicate
column name"). Here a migration's script is split into statements where SQLite says one is complete, and
`BEGIN IMMEDIATE` .. `PRAGMA user_version = N` .. `COMMIT` wraps them (SQLite's DDL and the header's
`user_version` are transactional). `PRAGMA journal_mode=WAL` cannot run inside a transaction: it runs before.

A store half migrated by a staminad from before this (`state.schemadelta`) is finished, not refused: its data
was never at risk, and advice to move it aside would have lost it. A failure this cannot explain is one line
saying what failed and that the store is unchanged; a genuinely damaged file is said to be damaged.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from state.lock import StateDirError
from state.readonly import damage
from state.schema import MIGRATIONS
from state.schemadelta import applied_prefix
from state.space import disk_problem

LATEST = len(MIGRATIONS)


def statements(script: str) -> list[str]:
    """The statements of a migration script, split where SQLite says one is complete (a `;` inside a string
    literal or a trigger's body does not end one); comments and blank text between them are dropped."""
    out: list[str] = []
    pending = ""
    pieces = script.split(";")
    for piece in pieces[:-1]:
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if _has_sql(pending):
                out.append(pending.strip())
            pending = ""
    pending += pieces[-1]
    if _has_sql(pending):
        out.append(pending.strip())
    return out


def _has_sql(text: str) -> bool:
    lines = (line.split("--", 1)[0] for line in text.splitlines())
    return bool("".join(lines).strip(" \t;"))


def migrate(db: Path) -> int:
    """Bring the store at `db` (made if missing) to the latest schema, one transaction per migration; returns the
    schema version it was at. A store from a newer staminad, or one a migration fails on, is a `StateDirError`
    naming what is wrong; a full or read-only disk is raised as SQLite said it (the caller waits or says so)."""
    db.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(db, timeout=30, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")  # not inside a transaction: SQLite refuses that there
        found = _version(conn)
        if found > LATEST:
            raise newer_store(db, found)
        for version in range(found + 1, LATEST + 1):
            _apply(conn, db, version)
    return found


def _version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _apply(conn: sqlite3.Connection, db: Path, version: int) -> None:
    """Migration `version` in one transaction; one left half done by an older staminad is finished."""
    script = statements(MIGRATIONS[version - 1])
    try:
        try:
            _transaction(conn, version, script)
        except sqlite3.OperationalError:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            done = applied_prefix(conn, MIGRATIONS[: version - 1], script)
            if not done:
                raise
            # The first `done` statements an older staminad's executescript committed one by one before it was
            # killed: the rest, and the version, now in one transaction.
            _transaction(conn, version, script[done:])
    except BaseException as exc:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error) and disk_problem(exc, db.parent) is None:
            raise _failed(db, version, exc) from None
        raise


def _transaction(conn: sqlite3.Connection, version: int, script: list[str]) -> None:
    """`script` and the bump to `version`, committed together (or not at all); nothing if already there."""
    conn.execute("BEGIN IMMEDIATE")
    if _version(conn) >= version:  # read inside the write lock: another process migrated it meanwhile
        conn.execute("ROLLBACK")
        return
    for sql in script:
        conn.execute(sql)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("COMMIT")


def newer_store(db: Path, version: int) -> StateDirError:
    return StateDirError(
        f"the state store {db} was written by a newer staminad (schema version {version}, this one knows "
        f"{LATEST}): upgrade staminad, or pass another --state-dir; the store is left as it is"
    )


def _failed(db: Path, version: int, exc: sqlite3.Error) -> StateDirError:
    """Why migration `version` failed, in one line: the file damaged (said so), or sound and left unchanged."""
    problem = damage(db)
    if problem:
        return StateDirError(
            f"the state store {db} is damaged ({problem}), found while migrating it to schema version {version}: "
            f"copy it aside with its -wal file and salvage it (`sqlite3 {db.name} .recover`), or pass another "
            "--state-dir"
        )
    sound = "the file is sound (quick_check ok) and " if problem == "" else ""
    return StateDirError(
        f"cannot migrate the state store {db} to schema version {version} ({exc}): nothing of that migration "
        f"was kept; {sound}its data is intact at version {version - 1}: keep it as it is, and report this line"
    )


__all__ = ["LATEST", "migrate", "newer_store", "statements"]
