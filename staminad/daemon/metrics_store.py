"""The metrics' figures read from the store: what every scenario, attempt, infra failure and model call recorded.

Read at scrape time over a read-only connection of its own (WAL: the daemon's writes go on), so a
series is always what the store holds, never a count kept beside it. The sweeps read are bounded:
every unfinished one (running or paused) plus the last `FINISHED_KEPT` others, so the label sets
(sweep x configuration x model) stay as small as the sweeps an operator keeps in flight.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from staminad.engine.score import unrecorded
from state.queries import connect_readonly

FINISHED_KEPT = 5  # finished, cancelled or failed sweeps still exported, newest first
# Seconds: a reference server starts in a tenth of a second, a model-driven harness turn takes minutes.
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)
DURATIONS = ("harness_seconds", "server_seconds", "suite_seconds")  # columns of `attempts`

Key = tuple[str, str]  # (sweep, configuration)


@dataclass
class Histogram:
    buckets: list[tuple[str, int]]  # cumulative (le, count), +Inf last
    total: float


@dataclass
class SweepRow:
    id: str
    status: str
    model: str  # the sweep's `[llm] model`, "none" when it calls no model
    cost_cap: float | None


@dataclass
class StoreFigures:
    sweeps: list[SweepRow] = field(default_factory=list)
    scenarios: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (sweep, config, status) -> n
    attempts: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (sweep, config, outcome) -> n
    turns_passed: dict[Key, int] = field(default_factory=dict)
    infra: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (sweep, config, kind) -> n
    durations: dict[tuple[str, str, str], Histogram] = field(default_factory=dict)  # (sweep, config, column)
    last_finished: dict[str, float] = field(default_factory=dict)  # sweep -> unix time of its last outcome
    tokens: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (sweep, config, direction) -> n
    llm_calls: dict[Key, int] = field(default_factory=dict)
    spend: dict[str, float] = field(default_factory=dict)  # sweep -> dollars
    models: dict[tuple[str, str], str] = field(default_factory=dict)  # (sweep, config) -> its model, when it has one

    def model(self, sweep: str, config: str = "") -> str:
        """The configuration's model (a sweep of `[[llm.models]]` runs several), else the sweep's `[llm] model`."""
        return self.models.get((sweep, config)) or next((s.model for s in self.sweeps if s.id == sweep), "none")


def read_figures(db: Path) -> StoreFigures:
    """Everything the metrics read from the store, in a handful of grouped queries."""
    conn = connect_readonly(db)
    try:
        return _read(conn)
    finally:
        conn.close()


def _read(conn: sqlite3.Connection) -> StoreFigures:
    out = StoreFigures()
    rows = conn.execute(
        "SELECT id, status, config FROM sweeps WHERE status IN ('running', 'paused') "
        "UNION ALL SELECT * FROM (SELECT id, status, config FROM sweeps WHERE status NOT IN ('running', 'paused') "
        "ORDER BY created_at DESC LIMIT ?)",
        (FINISHED_KEPT,),
    ).fetchall()
    for r in rows:
        llm = (json.loads(r["config"]) or {}).get("llm") or {}
        out.sweeps.append(SweepRow(r["id"], r["status"], llm.get("model") or "none", llm.get("sweep_cost_cap")))
    if not out.sweeps:
        return out
    ids = [s.id for s in out.sweeps]
    marks = ",".join("?" * len(ids))
    joined = f"JOIN configurations c ON s.config_id = c.id WHERE c.sweep_id IN ({marks})"
    for r in conn.execute(
        f"SELECT c.sweep_id, c.name, s.status, COUNT(*), SUM(s.turns_passed) FROM scenarios s {joined} "
        "GROUP BY 1, 2, 3",
        ids,
    ):
        out.scenarios[(r[0], r[1], r[2])] = r[3]
        out.turns_passed[(r[0], r[1])] = out.turns_passed.get((r[0], r[1]), 0) + (r[4] or 0)
    _unrecorded(conn, ids, out)
    for sweep, name, model in conn.execute(
        f"SELECT sweep_id, name, model FROM configurations WHERE sweep_id IN ({marks})",
        ids,
    ):
        if model:
            out.models[(sweep, name)] = model
    sums = ", ".join(
        f"COUNT(a.{col}), TOTAL(a.{col}), " + ", ".join(f"TOTAL(a.{col} <= {b})" for b in DURATION_BUCKETS)
        for col in DURATIONS
    )
    for r in conn.execute(
        f"SELECT c.sweep_id, c.name, a.outcome, COUNT(*), MAX(a.finished_at), {sums} "
        f"FROM attempts a JOIN scenarios s ON a.scenario_id = s.id {joined} GROUP BY 1, 2, 3",
        ids,
    ):
        sweep, config, outcome = r[0], r[1], r[2] or "running"
        out.attempts[(sweep, config, outcome)] = r[3]
        if r[4] is not None:
            out.last_finished[sweep] = max(out.last_finished.get(sweep, 0.0), r[4])
        width = 2 + len(DURATION_BUCKETS)
        for i, col in enumerate(DURATIONS):
            part = r[5 + i * width : 5 + (i + 1) * width]
            _add(out.durations, (sweep, config, col), int(part[0]), float(part[1]), [int(v) for v in part[2:]])
    for r in conn.execute(
        f"SELECT c.sweep_id, c.name, i.kind, COUNT(*) FROM infra_events i JOIN scenarios s ON i.scenario_id = s.id "
        f"{joined} GROUP BY 1, 2, 3",
        ids,
    ):
        out.infra[(r[0], r[1], r[2])] = r[3]
    for r in conn.execute(
        "SELECT c.sweep_id, c.name, TOTAL(l.input_tokens), TOTAL(l.output_tokens), TOTAL(l.cached_tokens), "
        f"TOTAL(l.cost), COUNT(*) FROM llm_calls l JOIN scenarios s ON l.scenario_id = s.id {joined} GROUP BY 1, 2",
        ids,
    ):
        for direction, n in zip(("input", "output", "cached"), r[2:5], strict=True):
            out.tokens[(r[0], r[1], direction)] = int(n)
        out.spend[r[0]] = out.spend.get(r[0], 0.0) + float(r[5])
        out.llm_calls[(r[0], r[1])] = r[6]
    return out


def _unrecorded(conn: sqlite3.Connection, ids: list[str], out: StoreFigures) -> None:
    """Scenarios a sweep lays out lazily and has not recorded yet count as pending, as every view counts them
    (`staminad.engine.score.unrecorded`), so the series sum to the sweep's scenarios from its start."""
    if "planned" not in {r[1] for r in conn.execute("PRAGMA table_info(sweeps)")}:
        return
    marks = ",".join("?" * len(ids))
    for sweep, name, planned in conn.execute(
        f"SELECT c.sweep_id, c.name, w.planned FROM configurations c JOIN sweeps w ON w.id = c.sweep_id "
        f"WHERE c.sweep_id IN ({marks})",
        ids,
    ):
        recorded = sum(n for (sw, c, _), n in out.scenarios.items() if (sw, c) == (sweep, name))
        if missing := unrecorded(planned, recorded):
            key = (sweep, name, "pending")
            out.scenarios[key] = out.scenarios.get(key, 0) + missing
            out.turns_passed.setdefault((sweep, name), 0)


def _add(
    into: dict[tuple[str, str, str], Histogram], key: tuple[str, str, str], n: int, total: float, le: list[int]
) -> None:
    """Fold one outcome's group into its (sweep, configuration, column) histogram."""
    bounds = [*map(str, DURATION_BUCKETS), "+Inf"]
    found = into.get(key)
    counts = [*le, n]
    if found is not None:
        counts = [c + b for c, (_, b) in zip(counts, found.buckets, strict=True)]
        total += found.total
    into[key] = Histogram(list(zip(bounds, counts, strict=True)), total)


__all__ = ["DURATIONS", "DURATION_BUCKETS", "FINISHED_KEPT", "Histogram", "StoreFigures", "SweepRow", "read_figures"]
