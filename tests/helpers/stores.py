"""Stores as an older staminad left them: the schema of an old version with rows in every table, and those rows read
back by the columns that version had, to show a migration kept every one of them."""

from __future__ import annotations

import contextlib
import sqlite3
import zlib
from pathlib import Path

from state.schema import MIGRATIONS

ROOT = Path(__file__).resolve().parent.parent.parent

_ROWS: dict[str, list[tuple[object, ...]]] = {
    "sweeps": [("s1", "old-sweep", "f" * 16, '{"name": "old-sweep"}', "running", 1.5, 8)],
    "configurations": [(1, "s1", "reference-R2-detailed", "reference", 2, "detailed")],
    "scenarios": [(1, 1, 0, "running", 3, "", "{}", 2.5, 1), (2, 1, 1, "passed", 9, "", "{}", 3.5, 0)],
    "attempts": [
        (1, 1, 0, 0, 0, "tested", "initial", "build it", 10.0, 0, None, 1.0, 0.1, 0.2, 0.3, 0.1, "pass", None, None,
         7, 7, zlib.compress(b"[]"), None, 11.0, 120),
        (2, 1, 1, 0, 0, "launched", "change", "change it", 12.0, None, None, None, None, None, None, None, None, None,
         None, None, None, None, None, None, None),
    ],
    "infra_events": [(1, 1, 1, 0, "harness_crash", "exit 1", 12.5)],
    "llm_calls": [(1, 1, 1, 0, "openai", "m", 100, 20, 0, 0.01, 200, 1.5, 0.0, 0, 10.5)],
}  # fmt: skip


def old_store(db: Path, version: int) -> None:
    """A store at schema `version` (>= 6: every table above exists) as that staminad wrote it, with rows in every
    table, checkpointed and closed (the file alone holds it)."""
    assert version >= 6, "the rows above need the tables of schema 6"
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        for i, script in enumerate(MIGRATIONS[:version], start=1):
            conn.executescript(script)
            conn.execute(f"PRAGMA user_version = {i}")
        for table, values in _ROWS.items():
            marks = ", ".join("?" * len(values[0]))
            names = ", ".join(_columns(conn, table)[: len(values[0])])
            conn.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", values)  # noqa: S608 (our names)
        conn.commit()


def rows(db: Path, version: int) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the store at `db`, by the columns its tables had at schema `version`, in row order."""
    with contextlib.closing(sqlite3.connect(":memory:")) as ref:
        for script in MIGRATIONS[:version]:
            ref.executescript(script)
        columns = {table: _columns(ref, table) for table in _ROWS}
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return {
            table: conn.execute(f"SELECT {', '.join(names)} FROM {table} ORDER BY rowid").fetchall()  # noqa: S608
            for table, names in columns.items()
        }


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
