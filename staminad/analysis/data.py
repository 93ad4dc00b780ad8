"""A sweep's results loaded from the store into plain structures the statistics work on."""

from __future__ import annotations

from pathlib import Path

import msgspec

from protocol.kinds import known_categories
from state import queries


class AttemptData(msgspec.Struct, frozen=True, kw_only=True):
    turn: int
    attempt: int
    infra_try: int
    outcome: str | None
    infra_kind: str | None
    categories: tuple[str, ...]
    loc: int | None
    failed_tests: tuple[str, ...]
    passed_tests: tuple[str, ...]


class ScenarioData(msgspec.Struct, frozen=True, kw_only=True):
    seed: int
    status: str
    turns_passed: int
    attempts: tuple[AttemptData, ...]


class ConfigData(msgspec.Struct, frozen=True, kw_only=True):
    sweep: str
    name: str
    agent: str
    retries: int
    feedback: str
    n_turns: int  # N: turns 0..N exist (turn 0 and N change requests; the best score is N+1)
    scenarios: tuple[ScenarioData, ...]
    sweep_status: str = ""  # the sweep's status when loaded (running, paused, finished, cancelled, error)
    model: str = ""  # the model it ran on ("" when stored before models were an axis, or none)
    planned: int | None = None  # scenarios it lays out (some maybe not recorded yet); None: not recorded

    def by_seed(self) -> dict[int, ScenarioData]:
        return {s.seed: s for s in self.scenarios}


def load(db: Path, sweeps: list[str] | None = None) -> list[ConfigData]:
    """Every configuration of the named sweeps (all sweeps when None)."""
    conn = queries.connect_readonly(db)
    try:
        known = queries.sweep_ids(conn)
        wanted = sweeps or known
        missing = [s for s in wanted if s not in known]
        if missing:
            raise KeyError(f"no sweep {missing[0]!r} in {db} (it has: {', '.join(known) or 'none'})")
        out = []
        for sweep in wanted:
            n_turns = queries.sweep_turns(conn, sweep)
            sweep_status = queries.sweep_status(conn, sweep)
            planned = queries.sweep_planned(conn, sweep)
            for c in queries.configurations(conn, sweep):
                scenarios = []
                for s in queries.scenarios(conn, c["id"]):
                    attempts = []
                    for a in queries.attempts(conn, s["id"]):
                        results = queries.decode_results(a["results"])
                        attempts.append(
                            AttemptData(
                                turn=a["turn"],
                                attempt=a["attempt"],
                                infra_try=a["infra_try"],
                                outcome=a["outcome"],
                                infra_kind=a["infra_kind"],
                                categories=known_categories(a["categories"]),
                                loc=a["loc"],
                                failed_tests=tuple(r["name"] for r in results if not r.get("passed")),
                                passed_tests=tuple(r["name"] for r in results if r.get("passed")),
                            )
                        )
                    scenarios.append(
                        ScenarioData(
                            seed=s["seed"], status=s["status"], turns_passed=s["turns_passed"], attempts=tuple(attempts)
                        )
                    )
                out.append(
                    ConfigData(
                        sweep=sweep,
                        name=c["name"],
                        agent=c["agent"],
                        retries=c["retries"],
                        feedback=c["feedback"],
                        n_turns=n_turns,
                        scenarios=tuple(scenarios),
                        sweep_status=sweep_status,
                        # a store not yet migrated has no model column; `in` on a Row tests values, not keys
                        model=c["model"] if "model" in c.keys() else "",  # noqa: SIM118
                        planned=planned,
                    )
                )
        return out
    finally:
        conn.close()
