"""What the scenario screen's `?` help says about its panes is how the keys really behave."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.containers import VerticalScroll
from textual.widgets import Collapsible, Static

from tests.helpers.inprocess import events, running_daemon, submit, until
from tests.helpers.sweeps import write_sweep
from tests.helpers.tui import open_only_scenario, settle
from tui.app import make_app
from tui.components.help import Help

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]


async def test_tab_reaches_the_detail_pane_to_scroll_and_the_transcript_to_open(tmp_path: Path) -> None:
    """Tab, then pgdn scrolls the detail pane; tab again, then enter opens the transcript; the help says so."""
    state = tmp_path / "st"
    path = write_sweep(tmp_path, "keys", ["fault:server-crash:once"], turns=1)
    async with running_daemon(state), events(state, ("keys",)) as stream:
        await submit(state, path)
        await until(stream, "sweep_finished")
        app = make_app(state / "staminad.sock")
        async with app.run_test(size=(100, 30)) as pilot:
            screen = await open_only_scenario(app, pilot, "keys")
            await settle(pilot, lambda: screen._shown_attempt is not None)
            await pilot.press("question_mark")
            assert isinstance(app.screen, Help)
            said = str(app.screen.query_one(Static).render())
            assert "tab       focus the detail pane: up/down, pgup/pgdn" in said
            assert "tab tab   focus the `agent transcript` title: enter" in said
            await pilot.press("escape")

            texts = screen.query_one("#texts", VerticalScroll)
            assert texts.max_scroll_y > 0 and texts.scroll_y == 0  # longer than its pane
            await pilot.press("tab")
            assert app.focused is texts
            await pilot.press("pagedown")
            await settle(pilot, lambda: texts.scroll_y > 0)
            transcript = screen.query_one("#transcript", Collapsible)
            assert transcript.collapsed
            await pilot.press("tab", "enter")
            await settle(pilot, lambda: not transcript.collapsed)
            await pilot.press("enter")
            await settle(pilot, lambda: transcript.collapsed)
