"""For viewer tests: the markup an agent wrote into the `xss<b>` sweep (tests/viewer/conftest.py), and a store of the
first schema version."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from state.schema import MIGRATIONS

SCRIPT = '<script>document.title="pwned";window.__pwned=1</script>'
XSS_SWEEP, XSS_CONFIG = "xss<b>", "agent<script>x</script> R=1 detailed"


def old_store(path: Path) -> Path:
    """A store written by the first schema version (no LoC, no horizon, no gateway table), with one attempt."""
    path.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path / "staminad.db")
    conn.executescript(MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO sweeps VALUES ('old', 'old', 'fp', '{}', 'finished', 0)")
    conn.execute("INSERT INTO configurations VALUES (1, 'old', 'reference R=0 detailed', 'reference', 0, 'detailed')")
    conn.execute(
        "INSERT INTO scenarios (id, config_id, seed, status, turns_passed, updated_at) VALUES (1, 1, 0, 'done', 1, 0)"
    )
    conn.execute(
        "INSERT INTO attempts (scenario_id, turn, attempt, infra_try, phase, prompt_kind, prompt, "
        "launched_at, outcome) VALUES (1, 0, 1, 0, 'tested', 'turn', 'build it', 0, 'pass')"
    )
    conn.commit()
    conn.close()
    return path
