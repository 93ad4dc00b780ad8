"""The box screen against a real daemon: `b` opens it and it shows the daemon's report, sweeps and box."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.inprocess import events, running_daemon, submit, until
from tests.helpers.sweeps import write_sweep
from tests.helpers.tui import settle
from tui.app import make_app
from tui.screens.box import BoxScreen

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]


async def test_the_box_screen_shows_a_running_sweep_and_the_machine(tmp_path: Path) -> None:
    """With a sweep waiting on its agents, the box screen lists it with its slots, and load, memory and GPUs."""
    path = write_sweep(tmp_path, "boxed", ["manual"], seeds="0-2", turns=1)
    path.write_text(path.read_text().replace("parallel = 4", "parallel = 2"))
    state = tmp_path / "st"
    async with running_daemon(state, max_parallel=8), events(state, ("boxed",)) as stream:
        await submit(state, path)
        await until(stream, "manual_prompt")
        app = make_app(state / "staminad.sock")
        async with app.run_test(size=(150, 40)) as pilot:
            await settle(pilot, lambda: app.connected)
            await pilot.press("b")
            screen = app.screen
            assert isinstance(screen, BoxScreen)
            await settle(pilot, lambda: screen.report is not None and bool(screen.report.sweeps))
            assert screen.report is not None
            text = str(screen.query_one("#box-text").render())
    assert "boxed: running, 0 of 3 finished, 2/2 slots, 1 queued" in text
    assert "2 of 8 daemon-wide slots in use" in text
    assert "on " in text and "CPUs" in text and "memory " in text and "state disk " in text
    assert "GPU" in text
