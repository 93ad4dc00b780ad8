"""stamina-tui driven with Pilot against a real daemon running fast deterministic agents."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Static

from protocol import GetSweep, ListSweeps, SweepList
from tests.helpers.inprocess import events, request, running_daemon, submit, until
from tests.helpers.sweeps import write_sweep
from tests.helpers.tui import settle
from tui.app import make_app
from tui.components.banner import Banner
from tui.components.confirm import Confirm
from tui.components.rows import RowTable
from tui.screens.events import EventLogScreen
from tui.screens.scenario import ScenarioScreen
from tui.screens.sweep import SweepScreen

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]


async def test_overview_sweep_and_scenario_screens_follow_a_live_sweep(tmp_path: Path) -> None:
    """The overview fills in, enter opens the sweep's scenario rows, enter again opens a scenario's attempts."""
    path = write_sweep(tmp_path, "live", ["reference", "mutant:accept-null"], seeds="0-1", turns=2)
    state = tmp_path / "st"
    async with running_daemon(state), events(state, ("live",)) as stream:
        app = make_app(state / "staminad.sock")
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, lambda: app.connected)
            await submit(state, path)
            await until(stream, "sweep_finished")
            await settle(
                pilot,
                lambda: app.board.sweeps.get("live") is not None and app.board.sweeps["live"].status == "finished",
            )
            table = app.screen.query_one("#sweeps", DataTable)
            await settle(pilot, lambda: table.row_count == 3)  # the sweep's row and its two configurations
            await pilot.press("enter")
            assert isinstance(app.screen, SweepScreen)
            rows = app.screen.query_one("#scenarios", RowTable)
            await settle(pilot, lambda: rows.row_count == 4)
            statuses = {str(rows.get_row_at(i)[2]) for i in range(4)}
            assert statuses == {"done", "failed"}
            await pilot.press("enter")
            assert isinstance(app.screen, ScenarioScreen)
            screen = app.screen
            await settle(pilot, lambda: screen.info is not None and screen._shown_attempt is not None)
            text = str(screen.query_one("#attempt", Static).render())
            assert "prompt (" in text
            await pilot.press("escape", "escape")
            assert app.screen.query_one(Banner)
            listed = await request(state, ListSweeps())
            assert isinstance(listed, SweepList) and [s.sweep for s in listed.sweeps] == ["live"]


async def test_pause_resume_cancel_each_need_a_confirmation(tmp_path: Path) -> None:
    """p/r/c open a confirmation; `n` leaves the sweep alone, `y` pauses, resumes and cancels it in the daemon."""
    path = write_sweep(tmp_path, "held", ["manual"], turns=1)
    state = tmp_path / "st"
    async with running_daemon(state), events(state, ("held",)) as stream:
        await submit(state, path)
        await until(stream, "manual_prompt")
        app = make_app(state / "staminad.sock")
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, lambda: "held" in app.board.sweeps)

            async def status() -> str:
                info = await request(state, GetSweep(sweep="held"))
                return str(info.status)

            await pilot.press("p")
            assert isinstance(app.screen, Confirm)
            await pilot.press("n")
            assert await status() == "running"
            await pilot.press("p", "y")
            await settle(pilot, lambda: app.board.sweeps["held"].status == "paused")
            assert await status() == "paused"
            await pilot.press("r", "y")
            await settle(pilot, lambda: app.board.sweeps["held"].status == "running")
            await pilot.press("c", "y")
            await settle(pilot, lambda: app.board.sweeps["held"].status == "cancelled")
            assert await status() == "cancelled"
            await pilot.press("p", "y")  # a sweep that is not running: the daemon's one-line error is shown
            await settle(pilot, lambda: any("is not running" in str(n.message) for n in app._notifications))


async def test_retry_a_scenario_stuck_on_infra_from_the_sweep_view(tmp_path: Path) -> None:
    """`t` on an infra_failed scenario asks, then the daemon retries it and the row ends done."""
    path = write_sweep(tmp_path, "inf", ["fault:self-kill:once"], turns=1)
    path.write_text(path.read_text().replace("infra_retries = 2", "infra_retries = 0"))
    state = tmp_path / "st"
    async with running_daemon(state), events(state, ("inf",)) as stream:
        await submit(state, path)
        await until(stream, "sweep_finished")
        app = make_app(state / "staminad.sock")
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, lambda: "inf" in app.board.scenarios)
            await pilot.press("enter")
            assert isinstance(app.screen, SweepScreen)
            rows = app.screen.query_one("#scenarios", RowTable)
            await settle(pilot, lambda: rows.row_count == 1)
            assert str(rows.get_row_at(0)[4]) == "infra_failed" and str(rows.get_row_at(0)[10]) == "I"
            await pilot.press("t")
            assert isinstance(app.screen, Confirm)
            await pilot.press("y")
            await until(stream, "sweep_finished")
            await settle(pilot, lambda: str(rows.get_row_at(0)[2]) == "done")
            assert str(rows.get_row_at(0)[10]) == "PP"
            await pilot.press("t")  # a done scenario is not retried: a warning, no dialog
            assert isinstance(app.screen, SweepScreen)


async def test_the_event_log_filters_and_infra_failures_stand_out(tmp_path: Path) -> None:
    """The log replays what happened before the monitor attached; `i` keeps only infra failures."""
    path = write_sweep(tmp_path, "log", ["reference", "fault:self-kill:once"], turns=1)
    state = tmp_path / "st"
    async with running_daemon(state), events(state, ("log",)) as stream:
        await submit(state, path)
        await until(stream, "sweep_finished")
        app = make_app(state / "staminad.sock")
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, lambda: any(line.kind == "sweep_finished" for line in app.board.log))
            await pilot.press("e")
            assert isinstance(app.screen, EventLogScreen)
            log = app.screen.query_one("#log", RowTable)
            everything = log.row_count
            assert everything >= 10
            await pilot.press("i")
            assert log.row_count == 1
            assert "the agent killed its own harness" in str(log.get_row_at(0)[3])
            await pilot.press("i", "slash", *"passed", "enter")
            assert 0 < log.row_count < everything
            assert all("passed" in str(log.get_row_at(i)[3]) for i in range(log.row_count))


async def test_survives_a_daemon_restart_and_says_when_none_runs(tmp_path: Path) -> None:
    """With no daemon the banner says so; it attaches once one starts, and resyncs after a restart."""
    state = tmp_path / "st"
    app = make_app(state / "staminad.sock")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, lambda: "staminad is not running" in app.status_text)
        banner = app.screen.query_one(Banner)
        assert banner.has_class("down") and "staminad start" in str(banner.render())
        async with running_daemon(state), events(state, ("one",)) as stream:
            await settle(pilot, lambda: app.connected)
            await submit(state, write_sweep(tmp_path, "one", ["reference"], turns=1))
            await until(stream, "sweep_finished")
            await settle(pilot, lambda: "one" in app.board.sweeps)
        await settle(pilot, lambda: not app.connected)
        assert banner.has_class("down")
        async with running_daemon(state), events(state, ("two",)) as stream:
            await settle(pilot, lambda: app.connected)
            await submit(state, write_sweep(tmp_path, "two", ["reference"], turns=1))
            await until(stream, "sweep_finished")
            await settle(
                pilot, lambda: {"one", "two"} <= set(app.board.sweeps) and app.board.sweeps["two"].status == "finished"
            )
            assert not banner.has_class("down")
