"""Every screen stays up while a real daemon keeps publishing events for what it shows.

A manual agent makes the event stream controllable: each `staminad done` the test writes ends an
attempt (the workspace has no server, so the attempt fails as `server_never_ready`, a scored failure
that uses up one of its R retries), and each ending sends a burst of events while the screen under
test is open.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static

from protocol import Event, GetScenario, ScenarioInfo
from protocol.events import AttemptTested, ManualPrompt
from tests.helpers.inprocess import events, request, running_daemon, submit, until
from tests.helpers.sweeps import write_sweep
from tests.helpers.tui import open_only_scenario, settle
from tui.app import StaminaApp, make_app
from tui.components.rows import RowTable
from tui.screens.events import EventLogScreen
from tui.screens.overview import OverviewScreen
from tui.screens.scenario import ScenarioScreen
from tui.screens.sweep import SweepScreen

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]


def _finish(prompt: Event) -> None:
    """What `staminad done --marker PATH` does: the attempt's harness is over."""
    assert isinstance(prompt.data, ManualPrompt)
    marker = Path(prompt.data.done.split("--marker ", 1)[1])
    marker.write_text(json.dumps({"exit": 0, "signal": None, "started": time.time(), "ended": time.time()}))


async def _open(app: StaminaApp, pilot: object, screen: str) -> type:
    """Go from the overview to `screen`; return the screen class expected on top."""
    if screen == "overview":
        return OverviewScreen
    await pilot.press("enter")  # type: ignore[attr-defined]
    await settle(pilot, lambda: isinstance(app.screen, SweepScreen))  # type: ignore[arg-type]
    if screen == "events":
        await pilot.press("e")  # type: ignore[attr-defined]
        return EventLogScreen
    if screen == "scenario":
        rows = app.screen.query_one("#scenarios", RowTable)
        await settle(pilot, lambda: rows.row_count == 1)  # type: ignore[arg-type]
        await pilot.press("enter")  # type: ignore[attr-defined]
        return ScenarioScreen
    return SweepScreen


@pytest.mark.parametrize("screen", ["overview", "sweep", "scenario", "events"])
async def test_each_screen_stays_up_while_events_for_it_arrive(tmp_path: Path, screen: str) -> None:
    """Three attempts end while the screen is open; it is still there and shows the daemon's latest state."""
    path = write_sweep(tmp_path, "live", ["manual"], turns=1)
    state = tmp_path / "st"
    async with running_daemon(state), events(state, ("live",)) as stream:
        await submit(state, path)
        prompt = await until(stream, "manual_prompt")
        app = make_app(state / "staminad.sock")
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, lambda: "live" in app.board.scenarios)
            expected = await _open(app, pilot, screen)
            await settle(pilot, lambda: isinstance(app.screen, expected))
            opened = app.screen
            for attempt in (1, 2, 3):  # R=2: the third failed attempt ends the scenario
                _finish(prompt)
                ended = await until(stream, "attempt_tested")
                assert isinstance(ended.data, AttemptTested)
                assert ended.data.attempt == attempt and not ended.data.passed

                def logged(seq: int = ended.seq) -> bool:
                    return any(line.seq == seq for line in app.board.log)

                await settle(pilot, logged)
                await pilot.pause()
                assert app.is_running and app.screen is opened
                prompt = await until(stream, "scenario_finished" if attempt == 3 else "manual_prompt")
            info = await request(state, GetScenario(sweep="live", configuration="manual R=2 detailed", seed=0))
            assert isinstance(info, ScenarioInfo) and info.status == "failed" and len(info.attempts) == 3
            (sid,) = app.board.scenarios["live"]

            def ended_failed() -> bool:
                s = app.board.find("live", sid)
                return s is not None and (s.status, s.history) == ("failed", "F")

            await settle(pilot, ended_failed)
            if isinstance(opened, ScenarioScreen):
                table = opened.query_one("#attempts", DataTable)
                await settle(pilot, lambda: table.row_count == 3 and str(table.get_row_at(2)[3]) == "fail")
            assert app.is_running and app.screen is opened


async def test_moving_through_attempts_faster_than_replies_shows_the_highlighted_one(tmp_path: Path) -> None:
    """Keys pressed without waiting for replies: the texts shown are the highlighted attempt's, never another's."""
    path = write_sweep(tmp_path, "walk", ["reference"], turns=5)
    state = tmp_path / "st"
    async with running_daemon(state), events(state, ("walk",)) as stream:
        await submit(state, path)
        await until(stream, "sweep_finished")
        app = make_app(state / "staminad.sock")
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await open_only_scenario(app, pilot, "walk")
            table = screen.query_one("#attempts", DataTable)
            await settle(pilot, lambda: table.row_count == 6 and screen._shown_attempt is not None)
            for keys in (["up"] * 5, ["down", "down"], ["up", "down", "up", "up"], ["down"] * 3):
                for key in keys:
                    await pilot.press(key)  # no pause between keys: several requests are in flight at once
                row = table.get_row_at(table.cursor_row)
                highlighted = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
                assert highlighted is not None

                def shown(wanted: int = int(highlighted)) -> bool:
                    return screen._shown_attempt == wanted

                await settle(pilot, shown)
                text = str(screen.query_one("#attempt", Static).render())
                assert f"turn {row[0]}, attempt {row[1]}," in text
            assert app.is_running
