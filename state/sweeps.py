"""Sweep-level queries of the store that the daemon needs: typed answers, so no SQL lives outside `state`.

Each function takes the open `Store` and commits its own writes, as the store's methods do.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import msgspec
from aiosqlite import Row

from protocol.kinds import SweepStatus, UnknownWord, known_sweep_status
from state.money import CallMoney, money_columns, money_of
from state.store import Store


class StoredSweep(msgspec.Struct, frozen=True, kw_only=True):
    """A sweep's row: `config` is the sweep file as JSON, `fingerprint` what a resubmit is compared by."""

    id: str
    status: SweepStatus
    fingerprint: str
    config: str
    created_at: float = 0.0
    paused_seconds: float = 0.0  # time spent in pauses that have ended
    paused_at: float | None = None  # when the pause under way began (None while not paused)
    reason: str = ""  # why the sweep ended in `error`, in one line ('' otherwise)

    def paused_total(self, now: float) -> float:
        """Seconds the sweep has spent paused up to `now`, the pause under way included."""
        return self.paused_seconds + (max(0.0, now - self.paused_at) if self.paused_at is not None else 0.0)


_COLUMNS = "id, status, fingerprint, config, created_at, paused_seconds, paused_at, reason"


def _sweep(row: Row) -> StoredSweep:
    """The row as a sweep. A status word outside the known set (a hand-edited or damaged row) reads as `error`
    with the word in its reason: that sweep says what is wrong, and every other sweep is still listed."""
    status: SweepStatus
    reason = str(row[7] or "")
    try:
        status = known_sweep_status(row[1])
    except UnknownWord as unknown:
        status, reason = "error", f"its stored status is unreadable: {unknown}"
    return StoredSweep(
        id=str(row[0]),
        status=status,
        fingerprint=str(row[2]),
        config=str(row[3]),
        created_at=float(row[4] or 0.0),
        paused_seconds=float(row[5] or 0.0),
        paused_at=None if row[6] is None else float(row[6]),
        reason=reason,
    )


async def find_sweep(store: Store, sweep_id: str) -> StoredSweep | None:
    async with store.db.execute(f"SELECT {_COLUMNS} FROM sweeps WHERE id = ?", (sweep_id,)) as cur:
        row = await cur.fetchone()
    return None if row is None else _sweep(row)


def read_sweeps(conn: sqlite3.Connection, sweep_id: str | None = None) -> list[StoredSweep]:
    """Every sweep's row, oldest first (or the one of `sweep_id`): a part of a read in one hop (`Store.read`)."""
    where = "" if sweep_id is None else "WHERE id = ? "
    params = () if sweep_id is None else (sweep_id,)
    return [_sweep(r) for r in conn.execute(f"SELECT {_COLUMNS} FROM sweeps {where}ORDER BY created_at", params)]


async def unfinished_sweeps(store: Store) -> list[StoredSweep]:
    """Sweeps a restarted daemon takes up again (running or paused), oldest first."""
    async with store.db.execute(
        f"SELECT {_COLUMNS} FROM sweeps WHERE status IN ('running', 'paused') ORDER BY created_at"
    ) as cur:
        return [_sweep(r) for r in await cur.fetchall()]


async def sweep_ids(store: Store) -> list[str]:
    async with store.db.execute("SELECT id FROM sweeps ORDER BY created_at") as cur:
        return [str(r[0]) for r in await cur.fetchall()]


async def release_running(store: Store, sweep_id: str, reason: str) -> None:
    """Scenarios of the sweep left `running` go back to `pending`, with `reason`."""
    await store.write_all(
        [
            (
                "UPDATE scenarios SET status = 'pending', reason = ? WHERE status = 'running' AND config_id IN "
                "(SELECT id FROM configurations WHERE sweep_id = ?)",
                (reason, sweep_id),
            )
        ]
    )


async def delete_sweep(store: Store, sweep_id: str) -> None:
    """Remove the sweep and everything recorded under it (a --force-new resubmit)."""
    scenarios = "SELECT s.id FROM scenarios s JOIN configurations c ON s.config_id = c.id WHERE c.sweep_id = ?"
    statements = (
        f"DELETE FROM llm_calls WHERE scenario_id IN ({scenarios})",
        f"DELETE FROM infra_events WHERE scenario_id IN ({scenarios})",
        f"DELETE FROM attempts WHERE scenario_id IN ({scenarios})",
        "DELETE FROM scenarios WHERE config_id IN (SELECT id FROM configurations WHERE sweep_id = ?)",
        "DELETE FROM configurations WHERE sweep_id = ?",
        "DELETE FROM sweeps WHERE id = ?",
    )
    await store.write_all([(statement, (sweep_id,)) for statement in statements])


class AttemptPrompt(msgspec.Struct, frozen=True, kw_only=True):
    prompt_kind: str
    prompt: str
    feedback: str | None
    # Where the attempt ran: its place in the scenario and the scenario's sandbox (its harness log is there).
    turn: int = 0
    attempt: int = 1
    infra_try: int = 0
    sandbox: dict[str, Any] = msgspec.field(default_factory=dict)
    server_log: str | None = None  # the tail of the log of the server start that tested it (None: no start)


async def attempt_prompt(store: Store, attempt_id: int) -> AttemptPrompt | None:
    """The prompt an attempt got, the feedback it produced, and where it ran."""
    async with store.db.execute(
        "SELECT a.prompt_kind, a.prompt, a.feedback, a.turn, a.attempt, a.infra_try, "
        "s.sandbox, a.server_log FROM attempts a JOIN scenarios s ON s.id = a.scenario_id "
        "WHERE a.id = ?",
        (attempt_id,),
    ) as cur:
        row = await cur.fetchone()
    if row is None:
        return None
    try:
        sandbox = json.loads(row[6] or "{}")
    except ValueError:
        sandbox = {}
    return AttemptPrompt(
        prompt_kind=row[0],
        prompt=row[1],
        feedback=row[2],
        turn=row[3],
        attempt=row[4],
        infra_try=row[5],
        sandbox=sandbox if isinstance(sandbox, dict) else {},
        server_log=row[7],
    )


async def attempt_scenario(store: Store, attempt_id: int) -> tuple[int, dict[str, Any]] | None:
    """The scenario an attempt belongs to: its id and where its sandbox is (None for no such attempt)."""
    async with store.db.execute(
        "SELECT s.id, s.sandbox FROM attempts a JOIN scenarios s ON s.id = a.scenario_id WHERE a.id = ?", (attempt_id,)
    ) as cur:
        row = await cur.fetchone()
    if row is None:
        return None
    try:
        sandbox = json.loads(row[1] or "{}")
    except ValueError:
        sandbox = {}
    return int(row[0]), sandbox if isinstance(sandbox, dict) else {}


async def attempt_usage(store: Store, scenario_id: int) -> dict[int, CallMoney]:
    """The model calls of each attempt id of the scenario, from the gateway's records (`state.money`)."""
    async with store.db.execute(
        f"SELECT attempt_id, {money_columns()} FROM llm_calls l "
        "WHERE scenario_id = ? AND attempt_id IS NOT NULL GROUP BY attempt_id",
        (scenario_id,),
    ) as cur:
        return {int(r[0]): money_of(r, 1) for r in await cur.fetchall()}


async def configuration_agent(store: Store, config_id: int) -> str:
    """The agent a configuration runs ("" for an unknown configuration)."""
    async with store.db.execute("SELECT agent FROM configurations WHERE id = ?", (config_id,)) as cur:
        row = await cur.fetchone()
    return "" if row is None else str(row[0])


async def outage_waits(store: Store, sweep_id: str) -> dict[tuple[int, int, int, int], float]:
    """Seconds the gateway waited out model outages in the recorded calls of each attempt still running, keyed
    by (scenario id, turn, attempt, infra try): what the engine adds to that attempt's turn timeout (only the
    calls since a restarted engine took it up again: its watchdog runs from then, see `watchdog_deadline`)."""
    sql = (
        "SELECT a.scenario_id, a.turn, a.attempt, a.infra_try, SUM(l.waited) FROM llm_calls l "
        "JOIN attempts a ON a.id = l.attempt_id JOIN scenarios s ON s.id = a.scenario_id "
        "JOIN configurations c ON c.id = s.config_id WHERE c.sweep_id = ? AND a.phase = 'launched' "
        "AND l.at >= COALESCE(a.resumed_at, 0) GROUP BY l.attempt_id"
    )
    async with store.db.execute(sql, (sweep_id,)) as cur:
        return {(int(r[0]), int(r[1]), int(r[2]), int(r[3])): float(r[4] or 0.0) for r in await cur.fetchall()}


class EndpointFigures(msgspec.Struct, frozen=True, kw_only=True):
    """A sweep's recorded model calls to one model: how many, how many failed, their mean latency, the dollars."""

    sweep: str
    model: str
    calls: int
    errors: int
    latency: float
    spend: float


async def endpoint_figures(store: Store) -> list[EndpointFigures]:
    """Per sweep and model, the gateway's recorded calls: an error is a 429, a 5xx or no answer (status 0)."""
    sql = (
        "SELECT c.sweep_id, l.model, COUNT(*), SUM(l.status = 0 OR l.status = 429 OR l.status >= 500), "
        "AVG(l.seconds), SUM(l.cost) FROM llm_calls l JOIN scenarios s ON s.id = l.scenario_id "
        "JOIN configurations c ON c.id = s.config_id GROUP BY c.sweep_id, l.model ORDER BY c.sweep_id, l.model"
    )
    async with store.db.execute(sql) as cur:
        return [
            EndpointFigures(
                sweep=str(r[0]),
                model=str(r[1]),
                calls=int(r[2]),
                errors=int(r[3] or 0),
                latency=float(r[4] or 0.0),
                spend=float(r[5] or 0.0),
            )
            for r in await cur.fetchall()
        ]


__all__ = [
    "AttemptPrompt",
    "EndpointFigures",
    "StoredSweep",
    "attempt_prompt",
    "attempt_usage",
    "configuration_agent",
    "delete_sweep",
    "endpoint_figures",
    "find_sweep",
    "outage_waits",
    "release_running",
    "sweep_ids",
    "unfinished_sweeps",
]
