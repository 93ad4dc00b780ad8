"""Sweep rows read back from the store: a damaged row names itself and never hides the others."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from staminad.daemon import views
from state.store import Store

pytestmark = pytest.mark.anyio


async def test_a_sweep_with_an_unknown_stored_status_reads_as_error_and_the_others_still_list(tmp_path: Path) -> None:
    """One row's status hand-edited to a word no daemon writes: that sweep is `error` naming the word; the rest list."""
    db = tmp_path / "s.db"
    async with await Store.open(db) as store:
        for name in ("good", "bad"):
            await store.ensure_sweep(name, name, "fp", "{}")
            await store.set_sweep_status(name, "running")
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE sweeps SET status = 'done' WHERE id = 'bad'")
    async with await Store.open(db) as store:
        listed = {info.sweep: info for info in await views.sweep_infos(store)}
        one = await views.sweep_info(store, "bad")
    assert listed["good"].status == "running" and listed["good"].reason == ""
    assert listed["bad"].status == "error" and "'done'" in listed["bad"].reason
    assert one.status == "error" and one.reason == listed["bad"].reason
