"""Migrations: scripts split into statements as SQLite reads them, a store half migrated by an older staminad
finished (never refused), and every refusal one line that says what is wrong without calling a sound store damaged."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from state.lock import StateDirError, check_store
from state.migrate import LATEST, migrate, statements
from state.readonly import store_error
from state.schema import MIGRATIONS
from tests.helpers.stores import old_store, rows


def test_statements_split_where_sqlite_says_a_statement_ends() -> None:
    """A `;` in a string or a trigger's body ends nothing; comments alone are no statement; a last `;` is optional."""
    script = """
    -- a comment; with a semicolon
    CREATE TABLE a (x TEXT DEFAULT ';');
    CREATE TRIGGER t AFTER INSERT ON a BEGIN UPDATE a SET x = 'b;c'; END;
    ALTER TABLE a ADD COLUMN y INTEGER
    """
    assert [" ".join(s.split()) for s in statements(script)] == [
        "-- a comment; with a semicolon CREATE TABLE a (x TEXT DEFAULT ';');",
        "CREATE TRIGGER t AFTER INSERT ON a BEGIN UPDATE a SET x = 'b;c'; END;",
        "ALTER TABLE a ADD COLUMN y INTEGER",
    ]
    assert all(statements(m) for m in MIGRATIONS)


def _version(db: Path) -> int:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


HALF_DONE = [(v, n) for v, script in enumerate(MIGRATIONS, start=1) for n in range(1, len(statements(script)) + 1)]


@pytest.mark.parametrize(("version", "done"), HALF_DONE, ids=[f"migration{v}-{n}" for v, n in HALF_DONE])
def test_a_migration_an_older_staminad_left_half_done_is_finished(tmp_path: Path, version: int, done: int) -> None:
    """A migration's first statements committed one by one, its version not bumped: the next start finishes it."""
    # Where an older staminad's executescript left it: every start refused "duplicate column name"/"already exists".
    db = tmp_path / "staminad.db"
    if version - 1 >= 6:
        old_store(db, version - 1)
    else:
        with contextlib.closing(sqlite3.connect(db)) as conn:
            for i, script in enumerate(MIGRATIONS[: version - 1], start=1):
                conn.executescript(script)
                conn.execute(f"PRAGMA user_version = {i}")
    before = rows(db, version - 1) if version - 1 >= 6 else None
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        for sql in statements(MIGRATIONS[version - 1])[:done]:
            conn.execute(sql)  # as executescript ran them: each committed on its own
    assert migrate(db) == version - 1
    assert _version(db) == LATEST
    if before is not None:
        assert rows(db, version - 1) == before


def test_a_schema_no_migration_made_is_refused_as_sound_and_kept(tmp_path: Path) -> None:
    """A column in the way of a migration that no migration made: one line naming it, the store sound, kept as is."""
    db = tmp_path / "staminad.db"
    old_store(db, 7)
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("ALTER TABLE sweeps ADD COLUMN paused_at TEXT")  # migration 8 adds it as REAL, after another
    with pytest.raises(StateDirError) as refused:
        migrate(db)
    line = str(refused.value)
    assert "duplicate column name: paused_at" in line and "schema version 8" in line
    assert "sound" in line and "keep it" in line and "move it aside" not in line and "\n" not in line
    assert _version(db) == 7 and rows(db, 7)["sweeps"]


def test_a_store_from_a_newer_staminad_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    """A schema version past this staminad's: refused in one line saying to upgrade; nothing written to it."""
    db = tmp_path / "staminad.db"
    old_store(db, 7)
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute(f"PRAGMA user_version = {LATEST + 1}")
    before = db.read_bytes()
    with pytest.raises(StateDirError, match=r"written by a newer staminad .*upgrade staminad"):
        migrate(db)
    with pytest.raises(StateDirError, match=r"written by a newer staminad"):
        check_store(db, migrating=True)
    assert db.read_bytes() == before


def test_only_a_damaged_file_is_called_damaged(tmp_path: Path) -> None:
    """An error on a sound store says the file is sound and to keep it; a file that is no database says damaged."""
    sound = tmp_path / "sound" / "staminad.db"
    sound.parent.mkdir()
    old_store(sound, 7)
    error = sqlite3.OperationalError("duplicate column name: paused_at")
    line = store_error(sound, error)
    assert "sound" in line and "keep it" in line and "move it aside" not in line
    broken = tmp_path / "broken" / "staminad.db"
    broken.parent.mkdir()
    broken.write_bytes(b"not a database, " * 512)
    line = store_error(broken, sqlite3.DatabaseError("file is not a database"))
    assert "is damaged (file is not a database)" in line and "move it aside" in line
    with pytest.raises(StateDirError, match=r"the file is damaged \(file is not a database\)"):
        check_store(broken, migrating=True)
