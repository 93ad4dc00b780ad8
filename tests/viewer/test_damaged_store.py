"""A store with a damaged row is one clear message page in the viewer, not a server error."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from starlette.testclient import TestClient

from staminad.viewer.app import create_app
from tests.helpers.viewer import old_store


def test_a_damaged_row_is_a_message_page_naming_it(tmp_path: Path) -> None:
    """A scenario whose stored status is no known word shows a page naming the scenario and the word."""
    state = old_store(tmp_path)
    conn = sqlite3.connect(state / "staminad.db")
    conn.execute("UPDATE scenarios SET status = 'exploded'")
    conn.commit()
    conn.close()
    r = TestClient(create_app(state)).get("/sweep?name=old")
    assert r.status_code == 200 and "Damaged store" in r.text, r.text
    assert "scenario 1 (seed 0 of configuration" in r.text and "unknown status" in r.text and "exploded" in r.text
