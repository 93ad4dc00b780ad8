"""The scenario screen's attempt detail always shows the highlighted row, however the daemon's answers interleave.

A slow answer is injected with a gate in front of the app's link (our own component's timing): moving off a row
and back while its neighbour's fetch is still under way must not leave the neighbour's texts on screen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from textual.widgets import Static

from protocol import GetAttempt
from tests.helpers.inprocess import events, running_daemon, submit, until
from tests.helpers.sweeps import write_sweep
from tests.helpers.tui import open_only_scenario, settle
from tui.app import make_app

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]


async def test_a_slow_answer_for_a_row_left_never_replaces_the_highlighted_rows_detail(tmp_path: Path) -> None:
    """Up (its fetch held back), Down at once, then the held answer lands: the pane shows the highlighted row."""
    state = tmp_path / "st"
    path = write_sweep(tmp_path, "race", ["fault:server-crash:once"], turns=1)
    async with running_daemon(state), events(state, ("race",)) as stream:
        await submit(state, path)
        await until(stream, "sweep_finished")
        app = make_app(state / "staminad.sock")
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await open_only_scenario(app, pilot, "race")
            await settle(pilot, lambda: screen.info is not None and screen._shown_attempt is not None)
            assert screen.info is not None
            _, second, third = (a.id for a in screen.info.attempts)
            assert screen._shown_attempt == third  # the cursor starts on the latest attempt

            gate = anyio.Event()
            answered: list[int] = []
            request = app.link.request

            async def slow_for_second(message: Any) -> Any:
                if isinstance(message, GetAttempt) and message.attempt_id == second:
                    await gate.wait()
                reply = await request(message)
                if isinstance(message, GetAttempt):
                    answered.append(message.attempt_id)
                return reply

            app.link.request = slow_for_second  # type: ignore[method-assign]
            await pilot.press("up")
            await settle(pilot, lambda: screen._asked_attempt == second)
            await pilot.press("down")  # back before the second attempt's answer came
            gate.set()
            await settle(pilot, lambda: third in answered)
            await pilot.pause()
            shown = str(screen.query_one("#attempt", Static).render())
            assert screen._shown_attempt == third and shown.startswith("turn 1, attempt 1, infra try 0: pass"), shown

            # An answer landing for a row the cursor is not on is dropped, even when its fetch was not cancelled.
            worker = screen.show_attempt(second)
            await worker.wait()
            assert second in answered and screen._shown_attempt == third
            assert str(screen.query_one("#attempt", Static).render()) == shown
