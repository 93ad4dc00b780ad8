"""`staminad export`: every attempt of the chosen sweeps as one flat table (CSV or Parquet)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from staminad.analysis.data import ConfigData

COLUMNS = ["sweep", "configuration", "agent", "retries", "feedback", "seed", "scenario_status", "turns_passed",
           "turn", "attempt", "infra_try", "outcome", "infra_kind", "categories", "loc", "failed_tests",
           "passed_tests"]


def rows(configs: list[ConfigData]) -> list[dict[str, Any]]:
    out = []
    for c in configs:
        for s in c.scenarios:
            for a in s.attempts:
                out.append({"sweep": c.sweep, "configuration": c.name, "agent": c.agent, "retries": c.retries,
                            "feedback": c.feedback, "seed": s.seed, "scenario_status": s.status,
                            "turns_passed": s.turns_passed, "turn": a.turn, "attempt": a.attempt,
                            "infra_try": a.infra_try, "outcome": a.outcome, "infra_kind": a.infra_kind,
                            "categories": ",".join(a.categories), "loc": a.loc,
                            "failed_tests": len(a.failed_tests), "passed_tests": len(a.passed_tests)})
    return out


def write(configs: list[ConfigData], path: Path, fmt: str) -> int:
    data = rows(configs)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        pq.write_table(pa.Table.from_pylist(data, schema=None) if data else pa.table({k: [] for k in COLUMNS}),
                       path)
    else:
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=COLUMNS)
            w.writeheader()
            w.writerows(data)
    return len(data)
