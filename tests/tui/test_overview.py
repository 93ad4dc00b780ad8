"""The overview's composition: configurations grouped under their sweep's one row, and ended sweeps hidden on `h`.

The board is filled with the daemon's own reply type (`SweepList`), as the app fills it after a `ListSweeps`;
no daemon runs, so nothing else writes to it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Static
from textual.widgets._footer import FooterKey

from protocol import SweepInfo, SweepList
from protocol.kinds import SweepStatus
from protocol.messages import ConfigStatus
from tui.app import StaminaApp, make_app
from tui.components.help import Help
from tui.screens.overview import OverviewScreen

pytestmark = pytest.mark.anyio


def _config(name: str, finished: int) -> ConfigStatus:
    return ConfigStatus(
        name=name,
        scenarios=4,
        finished=finished,
        mean_turns=3.0,
        se_turns=0.5,
        pass_rate=0.5,
        statuses={"done": finished, "running": 1},
        infra={"stuck": 1},
        scored=finished,
        unfinished=4 - finished,
    )


def _sweep(name: str, status: SweepStatus, *configs: ConfigStatus) -> SweepInfo:
    return SweepInfo(sweep=name, status=status, fingerprint="f", configurations=configs, created_at=time.time() - 600)


SWEEPS = SweepList(
    sweeps=(
        _sweep("live", "running", _config("reference R=1 detailed", 2), _config("mutant:no-cascade R=1 detailed", 2)),
        _sweep("old", "finished", _config("reference R=1 detailed", 4)),
        _sweep("dropped", "cancelled", _config("reference R=1 detailed", 1)),
    )
)


async def _overview(app: StaminaApp, pilot: Pilot[None]) -> tuple[OverviewScreen, DataTable[Any]]:
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, OverviewScreen)
    app.board.set_sweeps(SWEEPS)
    screen.sweeps_loaded()
    await pilot.pause()
    return screen, screen.query_one("#sweeps", DataTable)


def _column(table: DataTable[Any], name: str) -> list[str]:
    return [str(cell) for cell in table.get_column(name)]


def _app(tmp_path: Path) -> StaminaApp:
    return make_app(tmp_path / "no-daemon.sock")


async def test_configurations_sit_under_their_sweep_whose_state_and_eta_show_once(tmp_path: Path) -> None:
    """One sweep row holds the state, the ETA and the totals; its configuration rows under it leave them blank."""
    app = _app(tmp_path)
    async with app.run_test(size=(180, 30)) as pilot:
        _, table = await _overview(app, pilot)
        assert _column(table, "sweep") == ["live", "", "", "old", "", "dropped", ""]
        assert _column(table, "status") == ["running", "", "", "finished", "", "cancelled", ""]
        assert _column(table, "configuration") == [
            "2 configurations",
            "├ reference R=1 detailed",
            "└ mutant:no-cascade R=1 detailed",
            "1 configuration",
            "└ reference R=1 detailed",
            "1 configuration",
            "└ reference R=1 detailed",
        ]
        etas = _column(table, "ETA")
        assert etas[0] not in ("", "-", "done") and etas[1:3] == ["", ""] and etas[3:5] == ["done", ""]
        assert _column(table, "progress")[:3] == ["█████░░░░░ 4/8", "█████░░░░░ 2/4", "█████░░░░░ 2/4"]
        # Sweep rows add up their configurations; the running counts of a sweep that no longer runs are stale.
        assert _column(table, "running") == ["2", "1", "1", "-", "-", "-", "-"]
        assert _column(table, "infra failures")[:3] == ["stuck 2", "stuck 1", "stuck 1"]
        assert _column(table, "turns passed")[0] == "" and "n=2" in _column(table, "turns passed")[1]
        table.move_cursor(row=2)
        await pilot.press("enter")  # a configuration's row opens its sweep
        assert getattr(app.screen, "sweep", None) == "live"


async def test_h_hides_cancelled_then_finished_sweeps_then_shows_all_again(tmp_path: Path) -> None:
    """`h` cycles: cancelled hidden, then finished too, then every sweep; the subtitle says what is hidden."""
    app = _app(tmp_path)
    async with app.run_test(size=(180, 30)) as pilot:
        screen, table = await _overview(app, pilot)
        footer = {str(key.description) for key in screen.query(FooterKey)}
        assert "Hide ended" in footer

        def sweeps() -> list[str]:
            return [name for name in _column(table, "sweep") if name]

        assert sweeps() == ["live", "old", "dropped"] and screen.sub_title == "sweeps"
        table.move_cursor(row=3)  # on `old`: it stays highlighted while `dropped` goes
        await pilot.press("h")
        assert sweeps() == ["live", "old"] and screen.sub_title == "sweeps · 1 cancelled hidden (h shows them)"
        assert str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value) == "old\t"
        await pilot.press("h")
        assert sweeps() == ["live"] and "2 cancelled and finished hidden" in screen.sub_title
        app.board.set_sweeps(SweepList(sweeps=SWEEPS.sweeps[1:]))  # the running one ended and went
        screen.sweeps_loaded()
        await pilot.pause()
        empty = screen.query_one("#empty", Static)
        assert table.row_count == 0 and empty.display and "press h to show them" in str(empty.render())
        await pilot.press("h")
        assert sweeps() == ["old", "dropped"] and not empty.display and screen.sub_title == "sweeps"


async def test_help_names_the_hide_key(tmp_path: Path) -> None:
    """`?` on the overview lists `h` with what it hides."""
    app = _app(tmp_path)
    async with app.run_test(size=(180, 40)) as pilot:
        await _overview(app, pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, Help)
        text = str(app.screen.query_one(Static).render())
        assert "hide cancelled sweeps; again: finished ones too" in text


async def test_figures_that_come_under_a_sweep_view_show_when_the_overview_does(tmp_path: Path) -> None:
    """Covered by a sweep's view the overview keeps its table; popped back to, it shows the figures that came."""
    app = _app(tmp_path)
    async with app.run_test(size=(180, 30)) as pilot:
        screen, table = await _overview(app, pilot)
        await pilot.press("enter")  # the live sweep's view covers the overview
        assert getattr(app.screen, "sweep", None) == "live"
        app.board.set_sweeps(SweepList(sweeps=SWEEPS.sweeps[1:]))  # the running one ended and went
        screen.sweeps_loaded()
        await pilot.pause()
        assert [name for name in _column(table, "sweep") if name] == ["live", "old", "dropped"]
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        assert [name for name in _column(table, "sweep") if name] == ["old", "dropped"]
