"""The scenario screen's `d`: the highlighted attempt's code change against the attempt before it, from a real run."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from tests.helpers.inprocess import events, running_daemon, submit, until
from tests.helpers.sweeps import write_sweep
from tests.helpers.tui import open_only_scenario, settle
from tui.app import make_app
from tui.components.help import Help

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]


async def test_d_shows_the_highlighted_attempts_code_change_and_hides_it_again(tmp_path: Path) -> None:
    """`d` toggles the highlighted attempt's code change, which follows the cursor; `?` lists the key."""
    state = tmp_path / "st"
    path = write_sweep(tmp_path, "cc", ["fault:server-crash:once"], turns=1)
    async with running_daemon(state), events(state, ("cc",)) as stream:
        await submit(state, path)
        await until(stream, "sweep_finished")
        app = make_app(state / "staminad.sock")
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await open_only_scenario(app, pilot, "cc")
            await settle(pilot, lambda: screen.info is not None and screen._shown_attempt is not None)
            detail = screen.query_one("#attempt", Static)

            def shown() -> str:
                return str(detail.render())

            assert "code change" not in shown()
            await pilot.press("d")
            await settle(pilot, lambda: "code change" in shown())
            assert "against turn 0, attempt 2" in shown()  # turn 1's attempt against turn 0's last
            await pilot.press("up")  # turn 0, attempt 2: the fix of the crashing run_server.sh
            await settle(pilot, lambda: "against turn 0, attempt 1" in shown())
            assert "changed  run_server.sh +" in shown() and "--- a/run_server.sh" in shown()
            await pilot.press("up")  # turn 0, attempt 1 (its server crashed): its code against nothing
            await settle(pilot, lambda: "against the workspace as seeded" in shown())
            assert shown().index("feedback sent") < shown().index("code change") < shown().index("harness log")
            await pilot.press("d")
            await settle(pilot, lambda: "code change" not in shown())
            await pilot.press("question_mark")
            await settle(pilot, lambda: isinstance(app.screen, Help))
            assert "code change against the attempt before it" in str(app.screen.query_one(Static).render())
