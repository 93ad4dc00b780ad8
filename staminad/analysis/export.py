"""`staminad export`: every attempt of the chosen sweeps as one flat table (CSV or Parquet).

`COLUMNS` documents each column. A field that does not apply is empty (None in Parquet): an infra attempt
has no LoC or test counts, an attempt still running has no outcome or durations, an attempt without model
calls through the gateway has no tokens or cost.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from staminad.analysis.data import ConfigData
from staminad.analysis.metrics import agent_attempts, end_kind
from staminad.engine.score import standing
from state import browse, queries

COLUMNS: dict[str, str] = {
    "sweep": "the sweep's name",
    "configuration": "the configuration's name (agent, R, feedback)",
    "agent": "the agent (harness adapter) of the configuration",
    "retries": "R: feedback retries allowed per turn",
    "feedback": "feedback level: detailed | medium | minimal",
    "seed": "the scenario's seed",
    "scenario_status": "where the scenario ended: done | failed | infra_failed | capped (or still running)",
    "turns_passed": "turns the scenario passed, turn 0 included (its score once it is scored; best N+1)",
    "scenario_standing": "whether its score counts: scored | unfinished | never_run | unscored (the rule every "
    "view counts by; only scored scenarios enter a mean or a pass rate)",
    "turn": "turn t of this attempt (0 = initial implementation)",
    "attempt": "agent call within the turn: 1, then up to R feedback retries",
    "infra_try": "re-run of the same attempt after an infrastructure failure (0 = first run)",
    "outcome": "pass | fail | infra; empty while the attempt runs",
    "infra_kind": "the infrastructure failure's kind; empty unless outcome is infra",
    "categories": "failure categories of the failing tests, comma-separated; empty unless outcome is fail",
    "loc": "lines of code in the workspace after the harness ran (dependencies excluded); empty for infra",
    "failed_tests": "tests failed; empty unless the suite ran (pass or fail)",
    "passed_tests": "tests passed; empty unless the suite ran (pass or fail)",
    "launched_at": "when the attempt was launched, Unix seconds (UTC)",
    "finished_at": "when its outcome was recorded, Unix seconds (UTC); empty while it runs",
    "harness_seconds": "harness wall time from its completion marker (the turn timeout when stuck; a manual "
    "attempt: from the prompt's delivery to `done`)",
    "marker_latency": "seconds from the harness's end to the engine noticing its marker",
    "server_start_seconds": "seconds from starting `run_server.sh` to the server answering; empty if never ready",
    "suite_seconds": "seconds the test suite ran",
    "teardown_seconds": "seconds to stop the server's process group",
    "harness_exit": "the harness's exit status",
    "harness_signal": "the signal that ended the harness, if any",
    "model_calls": "model calls through the LLM gateway during the attempt; empty without any",
    "input_tokens": "input tokens of those calls (cached ones included)",
    "output_tokens": "output tokens of those calls",
    "cached_tokens": "input tokens served from the provider's cache",
    "cost": "US dollars of those calls at the configured prices (0 for unpriced calls, whose cost is unknown)",
    "estimated_calls": "of those calls, how many had their tokens (so cost) estimated from their size: the provider "
    "reported no usage, or the call was abandoned before it did; 0: the cost is exact",
    "unpriced_calls": "of those calls, how many were to a model without a price: their cost is unknown, not 0",
    "abandoned_calls": "of those calls, how many the endpoint got but nobody saw through (no answer in time, cut "
    "off, the attempt ended first): metered by estimate where the stream did not report usage",
    "compactions": "calls the harness made to compact its context (mini-swe-agent's summary), 0 for none",
}

_TIMING = (
    "launched_at",
    "finished_at",
    "harness_seconds",
    "marker_latency",
    "server_start_seconds",
    "suite_seconds",
    "teardown_seconds",
    "harness_exit",
    "harness_signal",
)
_USAGE = (
    "model_calls",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "cost",
    "estimated_calls",
    "unpriced_calls",
    "abandoned_calls",
    "compactions",
)


def _timing(a: browse.AttemptRecord) -> dict[str, Any]:
    """The attempt's timings and harness end, under their `COLUMNS` names (`_TIMING`)."""
    return {
        "launched_at": a.launched_at,
        "finished_at": a.finished_at,
        "harness_seconds": a.harness_seconds,
        "marker_latency": a.marker_latency,
        "server_start_seconds": a.server_seconds,
        "suite_seconds": a.suite_seconds,
        "teardown_seconds": a.teardown_seconds,
        "harness_exit": a.harness_exit,
        "harness_signal": a.harness_signal,
    }


def _usage(u: browse.AttemptUsage | None) -> dict[str, Any]:
    """The attempt's model calls through the gateway under their `COLUMNS` names (`_USAGE`); empty without any."""
    if u is None:
        return dict.fromkeys(_USAGE)
    return {
        "model_calls": u.calls,
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cached_tokens": u.cached_tokens,
        "cost": u.cost,
        "estimated_calls": u.estimated,
        "unpriced_calls": u.unpriced,
        "abandoned_calls": u.abandoned,
        "compactions": u.compactions,
    }


def _details(db: Path | None, configs: list[ConfigData]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Timings and usage per attempt, keyed by (sweep, configuration, seed, turn, attempt, infra_try)."""
    if db is None:
        return {}
    conn = queries.connect_readonly(db)
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    try:
        for sweep in dict.fromkeys(c.sweep for c in configs):
            for s in browse.scenarios(conn, sweep):
                usage = browse.usage_by_attempt(conn, s.id)
                for a in browse.attempts(conn, s.id):
                    row = _timing(a) | _usage(usage.get(a.id))
                    out[(sweep, s.configuration, s.seed, a.turn, a.attempt, a.infra_try)] = row
    finally:
        conn.close()
    return out


def rows(configs: list[ConfigData], db: Path | None = None) -> list[dict[str, Any]]:
    details = _details(db, configs)
    empty = dict.fromkeys([*_TIMING, *_USAGE])
    out = []
    for c in configs:
        for s in c.scenarios:
            where = standing(s.status, end_kind(s), bool(agent_attempts(s)), bool(s.attempts))
            for a in s.attempts:
                tested = a.outcome in ("pass", "fail")
                out.append(
                    {
                        "sweep": c.sweep,
                        "configuration": c.name,
                        "agent": c.agent,
                        "retries": c.retries,
                        "feedback": c.feedback,
                        "seed": s.seed,
                        "scenario_status": s.status,
                        "turns_passed": s.turns_passed,
                        "scenario_standing": where,
                        "turn": a.turn,
                        "attempt": a.attempt,
                        "infra_try": a.infra_try,
                        "outcome": a.outcome,
                        "infra_kind": a.infra_kind,
                        "categories": ",".join(a.categories),
                        "loc": None if a.outcome == "infra" else a.loc,
                        "failed_tests": len(a.failed_tests) if tested else None,
                        "passed_tests": len(a.passed_tests) if tested else None,
                        **details.get((c.sweep, c.name, s.seed, a.turn, a.attempt, a.infra_try), empty),
                    }
                )
    return out


def write(configs: list[ConfigData], path: Path, fmt: str, db: Path | None = None) -> int:
    data = rows(configs, db)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(data, schema=None) if data else pa.table({k: [] for k in COLUMNS}), path)
    else:
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
            w.writeheader()
            w.writerows(data)
    return len(data)
