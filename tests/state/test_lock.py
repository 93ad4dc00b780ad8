"""The store's sanity check: a store with no tables is called empty or truncated, never an older one."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from state.lock import StateDirError, check_store
from state.schema import MIGRATIONS


def _copy_without_wal(tmp_path: Path) -> Path:
    """A store's file copied while its rows are all still in its -wal (not checkpointed): a bare header."""
    live = tmp_path / "live.db"
    conn = sqlite3.connect(live)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.executescript(MIGRATIONS[0])
        conn.execute("PRAGMA user_version = 1")
        conn.commit()
        copy = tmp_path / "copy" / "staminad.db"
        copy.parent.mkdir()
        shutil.copyfile(live, copy)
    finally:
        conn.close()
    return copy


@pytest.mark.parametrize("kind", ["header", "empty"])
def test_a_store_with_no_tables_is_empty_or_truncated_for_a_read_and_migrated_by_a_write(
    tmp_path: Path, kind: str
) -> None:
    """A bare header or an empty file is refused as empty or truncated (not "older"), unless it is migrated."""
    db = _copy_without_wal(tmp_path) if kind == "header" else tmp_path / "staminad.db"
    if kind == "empty":
        db.touch()
    with pytest.raises(StateDirError, match=r"is empty or truncated \(no tables") as refused:
        check_store(db)
    assert "older" not in str(refused.value) and "\n" not in str(refused.value)
    check_store(db, migrating=True)  # `run` and `start` give it the schema


def test_an_older_store_with_tables_passes_the_check(tmp_path: Path) -> None:
    """A store at an older schema version keeps its tables: it is left to `report`'s older-store line."""
    db = tmp_path / "staminad.db"
    conn = sqlite3.connect(db)
    conn.executescript(MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    check_store(db)
