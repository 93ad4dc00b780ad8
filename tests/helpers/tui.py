"""For TUI tests: wait for a condition on the app while a real daemon works in the same event loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from textual.pilot import Pilot

from tui.components.rows import RowTable
from tui.screens.scenario import ScenarioScreen


async def settle(pilot: Pilot[None], condition: Callable[[], bool], timeout: float = 60) -> None:
    """Let the app process messages until `condition` holds (bounded)."""
    with anyio.fail_after(timeout):
        while not condition():
            await pilot.pause(0.02)  # yields to the daemon and the app; the condition is what we wait for


async def open_only_scenario(app: Any, pilot: Pilot[None], sweep: str) -> ScenarioScreen:
    """From the overview, open `sweep` and then its one scenario; the scenario screen once it is shown."""
    await settle(pilot, lambda: sweep in app.board.scenarios)
    await pilot.press("enter")
    rows = app.screen.query_one("#scenarios", RowTable)
    await settle(pilot, lambda: rows.row_count == 1)
    await pilot.press("enter")
    screen = app.screen
    assert isinstance(screen, ScenarioScreen)
    return screen
