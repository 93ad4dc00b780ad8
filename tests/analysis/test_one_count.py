"""One rule for what counts, behind every view: `status`, the TUI overview, the viewer page, `report` and `export`
give the same figures and denominators for a store holding running, stopped, never-run, infra-ended and finished
scenarios, and each says when the figures are not final."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

import anyio
import pytest
from rich.text import Text

from protocol import SweepInfo
from protocol.kinds import InfraKind, Outcome, ScenarioStatus, SweepStatus
from staminad.analysis import export, report
from staminad.analysis.data import load
from staminad.commands.clients import info_lines
from staminad.daemon.views import sweep_info
from staminad.viewer.model import scenario_page, sweep_page, sweeps_page
from state.store import Store, Verdict
from tui.screens.overview import COLUMNS, _rows

# seed: (status, turns passed, attempts as (turn, outcome, infra kind); outcome None: under way). turns = 3.
SCENARIOS: dict[int, tuple[ScenarioStatus, int, list[tuple[int, Outcome | None, InfraKind | None]]]] = {
    0: ("pending", 0, []),  # never run
    1: ("running", 1, [(0, "pass", None), (1, None, None)]),  # unfinished: one turn so far is no score
    2: ("infra_failed", 1, [(0, "pass", None), (1, "infra", "sandbox_lost")]),  # a platform fault: unscored
    3: ("infra_failed", 0, [(0, "infra", "stuck")]),  # the harness ran out of infra retries: scored 0 (paper)
    4: ("failed", 2, [(0, "pass", None), (1, "pass", None), (2, "fail", None)]),
    5: ("done", 4, [(0, "pass", None), (1, "pass", None), (2, "pass", None), (3, "pass", None)]),
}
# Scored: seeds 3, 4, 5 with 0, 2 and 4 turns: mean 2.0, SE 2/sqrt(3) = 1.15, pass rate 1/3.
SCORE = "2.0 ± 1.2 (33%)"
COUNTS = "n=3; 1 unfinished, 1 never run, 1 unscored"
CONFIG = "reference R=2 detailed"


async def _fill(db: Path, sweep_status: SweepStatus) -> None:
    async with await Store.open(db) as store:
        await store.ensure_sweep("mix", "mix", "fp", "{}")
        await store.set_sweep_turns("mix", 3)
        await store.set_sweep_status("mix", sweep_status)
        config = await store.ensure_configuration("mix", CONFIG, "reference", 2, "detailed")
        for seed, (status, passed, attempts) in SCENARIOS.items():
            row = await store.ensure_scenario(config, seed)
            for turn, outcome, kind in attempts:
                attempt = await store.begin_attempt(row.id, turn, 1, 0, "change", "p")
                if outcome is not None:
                    await store.tested(attempt.id, Verdict(outcome=outcome, infra_kind=kind))
            await store.set_scenario_status(row.id, status, turns_passed=passed, reason="r")


@pytest.fixture(params=["running", "cancelled"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "staminad.db"
    anyio.run(_fill, db, request.param)
    return db, str(request.param)


async def _info(db: Path) -> SweepInfo:
    async with await Store.open(db) as store:
        return await sweep_info(store, "mix")


def test_every_view_scores_the_same_scenarios_and_says_the_figures_are_not_final(
    store: tuple[Path, str], tmp_path: Path
) -> None:
    """CLI, TUI overview row, viewer model and page, report (JSON, Markdown) and export agree, with the notes."""
    db, sweep_status = store
    info = anyio.run(_info, db)
    words = "the sweep is still running" if sweep_status == "running" else "the sweep is cancelled"

    # `staminad status`
    (c,) = info.configurations
    assert (c.scored, c.unfinished, c.never_run, c.unscored) == (3, 1, 1, 1)
    line = info_lines(info)[1]
    assert f"turns passed {SCORE.replace('±', '+-')}, {COUNTS};" in line and words in line, line

    # the TUI's overview row, from the very reply the TUI receives
    _, row = _rows(info, now=0.0)  # the sweep's row, then its configuration's
    turns = row[1 + COLUMNS.index("turns passed")]
    assert isinstance(turns, Text) and turns.plain == "  2.0 ±  1.2 n=3 so far"
    assert row[1 + COLUMNS.index("pass rate")] == " 33%"

    # the viewer: its model and the page it renders
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        page = sweep_page(conn, "mix")
        listed = sweeps_page(conn)["sweeps"][0].headline[0]
        best = scenario_page(conn, "mix", CONFIG, 5)["best_score"]
    finally:
        conn.close()
    (v,) = page["configs"]
    assert v.se is not None
    assert (v.scored, v.mean, round(v.se, 1), v.pass_rate, v.counts) == (3, 2.0, 1.2, 1 / 3, COUNTS)
    assert listed.counts == COUNTS and listed.mean == 2.0
    assert page["not_final"] == [f"{CONFIG}: {v.not_final}"] and words in v.not_final
    assert page["turns_words"] == "turns = 3: turn 0 + 3 changes (best score 4)" and best == 4
    assert len(page["curves"][0].censored) == 1  # the survival curve is over the 3 scored: 1 survivor

    # `report`
    built = report.build(load(db), n_boot=50)
    cell = built.table.cells["reference"]["R=2 detailed"]
    assert (cell.n, cell.mean, round(cell.se, 1), cell.pass_rate) == (3, 2.0, 1.2, 1 / 3)
    assert (cell.unfinished, cell.never_run, cell.unscored) == (1, 1, 1)
    assert built.final is False and words in built.not_final[0]
    md = report.markdown(built)
    assert f"{SCORE[:-1]}, {COUNTS})" in md and md.splitlines()[2].startswith("**NOT FINAL** - mix: ")
    assert report.latex(built).splitlines()[2].startswith("% NOT FINAL - mix: ")

    # `export`: the standing of each attempt's scenario
    out = tmp_path / "x.csv"
    export.write(load(db), out, "csv", db)
    with open(out) as fh:
        standing = {int(r["seed"]): r["scenario_standing"] for r in csv.DictReader(fh)}
    assert standing == {1: "unfinished", 2: "unscored", 3: "scored", 4: "scored", 5: "scored"}


def test_a_configuration_with_nothing_scored_shows_a_dash_never_zeros(tmp_path: Path) -> None:
    """Only never-run and running scenarios: every view shows `-` and its denominators, not `0.0 ± 0.0, 0%`."""

    async def fill() -> None:
        async with await Store.open(tmp_path / "staminad.db") as store:
            await store.ensure_sweep("early", "early", "fp", "{}")
            await store.set_sweep_turns("early", 2)
            await store.set_sweep_status("early", "running")
            config = await store.ensure_configuration("early", CONFIG, "reference", 2, "detailed")
            await store.ensure_scenario(config, 0)
            running = await store.ensure_scenario(config, 1)
            await store.begin_attempt(running.id, 0, 1, 0, "initial", "p")
            await store.set_scenario_status(running.id, "running")

    async def info() -> SweepInfo:
        async with await Store.open(tmp_path / "staminad.db") as store:
            return await sweep_info(store, "early")

    anyio.run(fill)
    got = anyio.run(info)
    assert "turns passed -, n=0; 1 unfinished, 1 never run;" in info_lines(got)[1]
    _, row = _rows(got, now=0.0)
    assert (row[1 + COLUMNS.index("turns passed")], row[1 + COLUMNS.index("pass rate")]) == ("-", "-")
    built = report.build(load(tmp_path / "staminad.db"), n_boot=50)
    assert "| - (n=0; 1 unfinished, 1 never run) |" in report.markdown(built)
    assert "0.0 ± 0.0" not in report.markdown(built)
