"""A sweep's summary (what `staminad status` shows) counts scenarios by the report's scored/unscored rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from staminad.analysis.data import load
from staminad.analysis.report import scored
from staminad.engine.sweep import summarize
from state.store import Store, Verdict

pytestmark = pytest.mark.anyio

# seed: (status, turns passed, attempts as (turn, outcome, infra kind); outcome None: still running)
SCENARIOS: dict[int, tuple[str, int, list[tuple[int, str | None, str | None]]]] = {
    0: ("pending", 0, []),  # not started
    1: ("running", 0, [(0, None, None)]),  # on its first attempt: nothing tested yet
    2: ("pending", 0, []),  # cancelled before it started (released back to pending)
    3: ("failed", 1, [(0, "pass", None), (1, "fail", None)]),
    4: ("infra_failed", 0, [(0, "infra", "stuck")]),  # the harness ran out of infra retries: scored (paper)
    5: ("infra_failed", 1, [(0, "pass", None), (1, "infra", "sandbox_lost")]),  # a platform fault: unscored
    6: ("running", 1, [(0, "pass", None), (1, None, None)]),  # under way, one turn passed so far
}


async def test_status_counts_scored_scenarios_by_the_reports_rule(tmp_path: Path) -> None:
    """Pending, first-attempt, cancelled-before-start and platform-ended scenarios are unscored, as the report
    says; the mean is over the others (a harness out of infra retries counts with its turns)."""
    db = tmp_path / "staminad.db"
    async with await Store.open(db) as store:
        await store.ensure_sweep("w", "w", "f", "{}")
        await store.set_sweep_turns("w", 3)
        config = await store.ensure_configuration("w", "c", "reference", 0, "detailed")
        for seed, (status, passed, attempts) in SCENARIOS.items():
            row = await store.ensure_scenario(config, seed)
            for turn, outcome, kind in attempts:
                attempt = await store.begin_attempt(row.id, turn, 1, 0, "change", "p")
                if outcome is not None:
                    await store.tested(attempt.id, Verdict(outcome=outcome, infra_kind=kind))
            await store.set_scenario_status(row.id, status, turns_passed=passed, reason="r")
        (summary,) = await summarize(store, "w")
    (data,) = load(db)
    by_report = {s.seed for s in data.scenarios if scored(s)}
    assert by_report == {3, 4, 6}
    assert (summary.scenarios, summary.unscored) == (7, 7 - len(by_report))
    assert summary.mean_turns == pytest.approx(2 / 3) and summary.pass_rate == 0.0
