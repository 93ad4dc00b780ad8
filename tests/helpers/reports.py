"""A fixed selection of configurations for report tests: built in memory (no sweep run), the same on every call.

Two agents on two models at two feedback levels, whose scenarios pass, fail with categories, end by a harness out
of infra retries or by a platform fault, or have not finished, and one configuration with nothing scored, so every
section of the report (the grid, both views, the NOT FINAL note, empty curves) has something to show; and
the typed parts a test of one table or figure builds a report from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from protocol.kinds import FailureCategory, known_categories, known_infra_kind, known_outcome, known_scenario_status
from staminad.analysis.data import AttemptData, ConfigData, ScenarioData
from staminad.analysis.report import build
from staminad.analysis.reportdata import Cell, ConfigRow, Report, SurvivalEntry
from state import Store
from state.store import Verdict

CATEGORIES: tuple[FailureCategory, ...] = (
    "validation",
    "cascade_deletion",
    "wrong_endpoint",
    "default_value",
    "rename",
)


def _attempt(turn: int, attempt: int, outcome: str, k: int, *, kind: str | None = None) -> AttemptData:
    fails = outcome == "fail"
    return AttemptData(
        turn=turn,
        attempt=attempt,
        infra_try=0,
        outcome=outcome,
        infra_kind=kind,
        categories=(CATEGORIES[k % 5], CATEGORIES[(k * 3 + turn) % 5]) if fails else (),
        loc=None if outcome == "infra" else 40 + 7 * turn + k % 3,
        failed_tests=(f"t{turn}_{k % 4}", f"t{max(turn - 1, 0)}_{k % 2}") if fails else (),
        passed_tests=(f"t{turn}_{k % 4}", f"t{turn}_x") if outcome == "pass" else (f"t{turn}_x",),
    )


def _scenario(seed: int, k: int, n_turns: int) -> ScenarioData:
    """Scenario `seed` of configuration number `k`: how far it gets and how it ends follow from both."""
    kind = (seed + k) % 6
    reach = (seed * 2 + k) % (n_turns + 2)
    attempts: list[AttemptData] = []
    for turn in range(min(reach, n_turns + 1)):
        if (turn + seed + k) % 3 == 0:
            attempts.append(_attempt(turn, 1, "fail", k + seed))
            attempts.append(_attempt(turn, 2, "pass", k + seed))
        else:
            attempts.append(_attempt(turn, 1, "pass", k + seed))
    passed = len({a.turn for a in attempts})
    if kind == 4:  # a harness out of infra retries: scored (paper view), censored in the other view
        attempts.append(_attempt(passed, 1, "infra", k, kind="harness_crash"))
        return ScenarioData(seed=seed, status="infra_failed", turns_passed=passed, attempts=tuple(attempts))
    if kind == 5:  # a platform fault: left out of every figure
        attempts.append(_attempt(passed, 1, "infra", k, kind="sandbox_lost"))
        return ScenarioData(seed=seed, status="infra_failed", turns_passed=passed, attempts=tuple(attempts))
    if passed > n_turns:
        return ScenarioData(seed=seed, status="done", turns_passed=passed, attempts=tuple(attempts))
    if kind == 3 and seed == 3:  # still running: the sweep's numbers are not final
        return ScenarioData(seed=seed, status="running", turns_passed=passed, attempts=tuple(attempts))
    attempts += [_attempt(passed, a, "fail", k + seed + a) for a in (1, 2, 3)]
    return ScenarioData(seed=seed, status="failed", turns_passed=passed, attempts=tuple(attempts))


def report_configs() -> list[ConfigData]:
    """The fixed selection: 8 configurations of 6 scenarios, and one whose only scenario never ran."""
    out = []
    k = 0
    for model in ("m-small", "m-large"):
        for agent in ("alpha", "beta"):
            for feedback in ("detailed", "minimal"):
                out.append(
                    ConfigData(
                        sweep="fixed",
                        name=f"{agent} R=2 {feedback} @{model}",
                        agent=agent,
                        retries=2,
                        feedback=feedback,
                        n_turns=4,
                        scenarios=tuple(_scenario(seed, k, 4) for seed in range(6)),
                        sweep_status="running",
                        model=model,
                    )
                )
                k += 1
    never = ScenarioData(seed=0, status="pending", turns_passed=0, attempts=())
    out.append(
        ConfigData(
            sweep="fixed",
            name="gamma R=2 detailed @m-small",
            agent="gamma",
            retries=2,
            feedback="detailed",
            n_turns=4,
            scenarios=(never,),
            sweep_status="running",
            model="m-small",
        )
    )
    return out


def report_of(**fields: Any) -> Report:
    """A report of no configuration with `fields` set: the parts a test of one table or figure gives."""
    return msgspec.structs.replace(build([], n_boot=10), **fields)


def row(agent: str, retries: int, feedback: str, mean: float, *, scenarios: int = 4, n_turns: int = 5) -> ConfigRow:
    """A configuration's report row, named as a sweep names it, with nothing left out."""
    return ConfigRow(
        name=f"{agent} R={retries} {feedback}",
        sweep="s",
        agent=agent,
        model="",
        retries=retries,
        feedback=feedback,
        n_turns=n_turns,
        unscored=0,
        unfinished=0,
        never_run=0,
        scenarios=scenarios,
        mean_turns=mean,
        se_turns=0.5,
        pass_rate=0.25,
        infra_failed=0,
        platform_failed=0,
        view="paper",
    )


def cell(mean: float, se: float, rate: float, best: bool, not_worse: bool) -> Cell:
    """A main-table cell of four scored scenarios, bold when it is its row's best."""
    return Cell(
        mean=mean,
        se=se,
        pass_rate=rate,
        n=4,
        unscored=0,
        unfinished=0,
        never_run=0,
        best=best,
        bold=best,
        p_vs_best=1.0,
        not_worse=not_worse,
    )


def curve(times: list[float], survival: list[float], *, tau: float = 4.0, rmst: float = 2.0) -> SurvivalEntry:
    """A survival entry of three scored scenarios with the given Kaplan-Meier steps (no band, no censoring)."""
    return SurvivalEntry(
        tau=tau,
        scored=3,
        unscored=0,
        unfinished=0,
        never_run=0,
        rmst=rmst,
        rmst_ci=[rmst, rmst],
        km_times=times,
        km_survival=survival,
        events=len(times),
        censored=0,
    )


async def write_store(db: Path) -> None:
    """The fixed selection as a running sweep `fixed` in a store, with a gateway-metered model call per attempt."""
    async with await Store.open(db) as store:
        await fill_store(store)


async def fill_store(store: Store) -> None:
    """The fixed selection written as a running sweep `fixed` into an open store (see `write_store`)."""
    await store.ensure_sweep("fixed", "fixed", "fp", "{}")
    await store.set_sweep_turns("fixed", 4)
    await store.set_sweep_status("fixed", "running")
    for c in report_configs():
        config = await store.ensure_configuration("fixed", c.name, c.agent, c.retries, c.feedback, c.model)
        for s in c.scenarios:
            row = await store.ensure_scenario(config, s.seed)
            for a in s.attempts:
                begun = await store.begin_attempt(row.id, a.turn, a.attempt, a.infra_try, "change", "p")
                await store.tested(
                    begun.id,
                    Verdict(
                        outcome=known_outcome(a.outcome),
                        infra_kind=None if a.infra_kind is None else known_infra_kind(a.infra_kind),
                        categories=known_categories(",".join(a.categories)),
                    ),
                )
                cost = 0.01 * a.attempt + 0.003 * s.seed
                await store.llm_call(
                    row.id, begun.id, a.turn, "openai", "m", (1000 * a.attempt, 200, 0), cost, 200, 0.5, 0.0, False
                )
            if s.status != "pending":
                await store.set_scenario_status(
                    row.id, known_scenario_status(s.status), turns_passed=s.turns_passed, reason="r"
                )
