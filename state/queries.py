"""Read-only queries for reports and exports (plain sqlite3: analysis is offline and synchronous)."""

from __future__ import annotations

import sqlite3
import zlib
from pathlib import Path
from typing import Any

import msgspec

from state.readonly import open_readonly


def connect_readonly(db: Path) -> sqlite3.Connection:
    """The store's latest rows, read-only, as one snapshot: a read transaction is open from the first query to
    `close`, so a report's queries agree with each other while a daemon writes. How it is opened (live, by a
    user who cannot write the directory too) is `state.readonly`'s."""
    conn = open_readonly(db)
    conn.row_factory = sqlite3.Row
    conn.execute("BEGIN")
    return conn


def sweep_ids(conn: sqlite3.Connection) -> list[str]:
    return [r["id"] for r in conn.execute("SELECT id FROM sweeps ORDER BY created_at")]


def sweep_turns(conn: sqlite3.Connection, sweep_id: str) -> int:
    row = conn.execute("SELECT turns FROM sweeps WHERE id = ?", (sweep_id,)).fetchone()
    return int(row["turns"] or 0) if row else 0


def sweep_planned(conn: sqlite3.Connection, sweep_id: str) -> int | None:
    """Scenarios per configuration the sweep lays out (None for a store from before it was recorded)."""
    if "planned" not in {r[1] for r in conn.execute("PRAGMA table_info(sweeps)")}:
        return None
    row = conn.execute("SELECT planned FROM sweeps WHERE id = ?", (sweep_id,)).fetchone()
    return int(row["planned"]) if row and row["planned"] is not None else None


def sweep_status(conn: sqlite3.Connection, sweep_id: str) -> str:
    row = conn.execute("SELECT status FROM sweeps WHERE id = ?", (sweep_id,)).fetchone()
    return str(row["status"] or "") if row else ""


def sweep_config(conn: sqlite3.Connection, sweep_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT config FROM sweeps WHERE id = ?", (sweep_id,)).fetchone()
    return None if row is None else dict(msgspec.json.decode(row["config"]))


def configurations(conn: sqlite3.Connection, sweep_id: str) -> list[sqlite3.Row]:
    return list(conn.execute("SELECT * FROM configurations WHERE sweep_id = ? ORDER BY id", (sweep_id,)))


def scenarios(conn: sqlite3.Connection, config_id: int) -> list[sqlite3.Row]:
    return list(conn.execute("SELECT * FROM scenarios WHERE config_id = ? ORDER BY seed", (config_id,)))


def attempts(conn: sqlite3.Connection, scenario_id: int) -> list[sqlite3.Row]:
    return list(
        conn.execute("SELECT * FROM attempts WHERE scenario_id = ? ORDER BY turn, attempt, infra_try", (scenario_id,))
    )


def decode_results(blob: bytes | None) -> list[dict[str, Any]]:
    return [] if blob is None else list(msgspec.json.decode(zlib.decompress(blob)))
