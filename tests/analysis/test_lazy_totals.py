"""A sweep's totals are one definition in every view, however far its lazy expansion got: a 9-scenario sweep
with 8 recorded, and a configuration with none yet, reads 9 scenarios in `status`, the TUI, the viewer, `report`
and the metrics; a scenario a cancel put back to pending after it passed turns is unfinished, not never run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from protocol import SweepInfo
from protocol.kinds import SweepStatus
from staminad.analysis import report
from staminad.analysis.data import load
from staminad.daemon.metrics_store import read_figures
from staminad.daemon.views import sweep_info
from staminad.engine.score import config_tally, standing, tally, unrecorded
from staminad.viewer.model import sweep_page, sweeps_page
from state.store import Store, Verdict
from tui.screens.overview import COLUMNS, _rows

FIRST, SECOND = "reference R=2 detailed", "mutant:no-cascade R=2 detailed"
PLANNED = 9  # seeds 0-8; the first configuration has 8 recorded, the second none yet


async def _fill(db: Path, status: SweepStatus) -> None:
    async with await Store.open(db) as store:
        await store.ensure_sweep("lazy", "lazy", "fp", "{}")
        await store.set_sweep_turns("lazy", 8, PLANNED)
        await store.set_sweep_status("lazy", status)
        first = await store.ensure_configuration("lazy", FIRST, "reference", 2, "detailed")
        await store.ensure_configuration("lazy", SECOND, "mutant:no-cascade", 2, "detailed")
        for seed in range(8):
            row = await store.ensure_scenario(first, seed)
            if seed < 2:  # finished: passed everything
                for turn in range(9):
                    attempt = await store.begin_attempt(row.id, turn, 1, 0, "change", "p")
                    await store.tested(attempt.id, Verdict(outcome="pass"))
                await store.set_scenario_status(row.id, "done", turns_passed=9)
            elif seed == 2:  # passed 8 turns, then a cancel put it back to pending (state.sweeps.release_running)
                for turn in range(8):
                    attempt = await store.begin_attempt(row.id, turn, 1, 0, "change", "p")
                    await store.tested(attempt.id, Verdict(outcome="pass"))
                await store.begin_attempt(row.id, 8, 1, 0, "change", "p")
                await store.set_scenario_status(row.id, "pending", turns_passed=8, reason="cancelled")


@pytest.fixture(params=["running", "cancelled"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / "staminad.db"
    anyio.run(_fill, path, request.param)
    return path


async def _info(db: Path) -> SweepInfo:
    async with await Store.open(db) as store:
        return await sweep_info(store, "lazy")


def test_every_view_counts_the_scenarios_not_recorded_yet(db: Path) -> None:
    """status, the TUI overview, the viewer (page and list), report and the metrics agree on 9 + 9 scenarios."""
    info = anyio.run(_info, db)
    first, second = info.configurations
    assert (first.name, second.name) == (FIRST, SECOND)
    # `status` (and the box screen and /ops, which sum these): 9 each, 2 finished; 1 unfinished (the cancelled
    # one that passed 8 turns), the rest never run, the unrecorded one among them.
    assert (first.scenarios, first.finished, first.scored, first.unfinished, first.never_run) == (9, 2, 2, 1, 6)
    assert (second.scenarios, second.finished, second.never_run) == (9, 0, 9)
    assert sum(first.statuses.values()) == 9 and second.statuses == {"pending": 9}

    # the TUI overview's progress bars say "2/18" and "2/9", from that very reply
    rows = _rows(info, now=0.0)
    progress = [str(r[1 + COLUMNS.index("progress")]) for r in rows]
    assert progress[0].endswith("2/18") and progress[1].endswith("2/9") and progress[2].endswith("0/9"), progress

    # the viewer: the sweep page and the list of sweeps
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        page = sweep_page(conn, "lazy")
        listed = sweeps_page(conn)["sweeps"][0]
    finally:
        conn.close()
    viewed = [(c.scenarios, c.finished, c.scored, c.unfinished, c.never_run) for c in page["configs"]]
    assert viewed == [(9, 2, 2, 1, 6), (9, 0, 0, 0, 9)] and listed.scenarios == 18

    # `report`
    built = report.build(load(db), n_boot=20)
    counts = {name: (c.total, c.scored, c.unfinished, c.never_run) for name, c in built.scenarios.items()}
    assert counts == {FIRST: (9, 2, 1, 6), SECOND: (9, 0, 0, 9)}

    # the metrics: staminad_scenarios by status sums to the sweep's scenarios
    figures = read_figures(db)
    by_config = {c: sum(n for (_, name, _), n in figures.scenarios.items() if name == c) for c in (FIRST, SECOND)}
    assert by_config == {FIRST: 9, SECOND: 9}
    assert figures.scenarios[("lazy", SECOND, "pending")] == 9
    assert all(config_tally(c).total == 9 for c in info.configurations)


def test_a_pending_scenario_with_attempts_is_unfinished_and_unrecorded_ones_never_ran() -> None:
    """The rule itself: pending after a cancel with attempts is unfinished; missing rows add to never run."""
    assert standing("pending", None, tested=True) == "unfinished"
    assert standing("pending", None, tested=False, started=True) == "unfinished"
    assert standing("pending", None, tested=False) == "never_run"
    assert unrecorded(9, 8) == 1 and unrecorded(None, 8) == 0 and unrecorded(9, 9) == 0
    t = tally([("scored", 3, False)], unrecorded=2)
    assert (t.scored, t.never_run, t.total) == (1, 2, 3)
