"""Store creation and migrations survive a SIGKILL at every statement: a real process is killed at each one, the
store is then whole at one schema version (never between), its rows untouched, and the next start migrates it."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from state.migrate import LATEST, statements
from state.schema import MIGRATIONS
from state.schemadelta import schema_items
from tests.helpers.stores import ROOT, old_store, rows

pytestmark = pytest.mark.slow  # some 260 processes, each opening a store: ~15 s of CPU, minutes on a busy box

REFERENCE = {}  # schema version -> the schema items a store at that version has, made in memory
with contextlib.closing(sqlite3.connect(":memory:")) as _ref:
    REFERENCE[0] = schema_items(_ref)
    for _version, _script in enumerate(MIGRATIONS, start=1):
        for _sql in statements(_script):
            _ref.execute(_sql)
        REFERENCE[_version] = schema_items(_ref)


def _kill_points(pairs: list[tuple[int, Path]]) -> dict[Path, str]:
    """Run `tests.helpers.killpoint` on each (K, store): what became of each process, by store."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.helpers.killpoint", *(f"{k}:{db}" for k, db in pairs)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    said = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    return {db: said[str(db)] for _, db in pairs}


def _schema(db: Path) -> tuple[int, set[tuple[object, ...]]]:
    """(schema version, schema items) of the store at `db` as a later reader finds it; (0, none) for no file."""
    if not db.exists():
        return 0, set()
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0]), schema_items(conn)


@pytest.mark.parametrize("start", [7, 0], ids=["schema-7", "new-state-dir"])
def test_a_kill_at_every_statement_leaves_one_version_and_the_next_start_migrates(tmp_path: Path, start: int) -> None:
    """SIGKILL at each statement of creating (a new state dir) or migrating (from schema 7) a store: one version."""
    seed = tmp_path / "seed.db"
    if start:
        old_store(seed, start)
    before = rows(seed, start) if start else {}

    def copy(name: str) -> Path:
        db = tmp_path / name / "staminad.db"
        db.parent.mkdir()
        if start:
            shutil.copyfile(seed, db)
        return db

    counted = copy("count")
    (said,) = _kill_points([(0, counted)]).values()
    total = int(said.removeprefix("ran "))
    assert total > 2 * (LATEST - start), said  # every migration's BEGIN, statements, version and COMMIT
    stores = {k: copy(f"kill-{k}") for k in range(1, total + 1)}

    killed = _kill_points([(k, db) for k, db in stores.items()])
    assert set(killed.values()) == {"killed"}, killed
    versions = set()
    for k, db in stores.items():
        version, items = _schema(db)
        versions.add(version)
        assert items == REFERENCE[version], f"killed at statement {k}: schema between versions ({version})"
        if start:
            assert rows(db, start) == before, f"killed at statement {k}: rows changed"
    assert versions == set(range(start, LATEST + 1)), versions  # a kill landed inside every migration

    restarted = _kill_points([(0, db) for db in stores.values()])
    assert all(line.startswith("ran ") for line in restarted.values()), restarted
    for k, db in stores.items():
        assert _schema(db) == (LATEST, REFERENCE[LATEST]), f"killed at statement {k}, then started"
        with contextlib.closing(sqlite3.connect(db)) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        if start:
            assert rows(db, start) == before, f"killed at statement {k}, then started: rows changed"
