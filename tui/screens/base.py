"""What every monitor screen shares: the connection banner, the app's board and link, help and the event log."""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from textual.screen import Screen
from textual.widgets import Input

from tui.board import Board, Change
from tui.components.banner import Banner
from tui.components.help import Help


class Monitor(Protocol):
    """What screens use of the app (`tui.app.StaminaApp`): screens never import the app, the app imports them."""

    board: Board
    connected: bool
    status_text: str

    async def ask(self, message: Any, quiet: bool = False) -> Any | None: ...

    def need_scenarios(self, sweep: str) -> None: ...

    def resync(self) -> None: ...

    def open_events(self, text_filter: str) -> None: ...


class MonitorScreen(Screen[None]):
    KEY_HELP: ClassVar[list[tuple[str, str]]] = []
    HELP_TITLE = "stamina-tui"
    LIST_ID = ""  # the screen's main list, where `escape` from a filter box returns focus
    EVENT_FILTER = ""  # what the event log opened from here filters on

    @property
    def stamina(self) -> Monitor:
        return self.app  # type: ignore[return-value]  # the app is a StaminaApp, which is a Monitor

    def on_mount(self) -> None:
        self.query_one(Banner).show(self.stamina.connected, self.stamina.status_text)

    # --- what the app tells every screen on the stack (defined here so mypy checks each override) --

    def board_changed(self, changes: list[Change]) -> None:
        """Events were folded into the board; `changes` says, per event, what moved."""

    def sweeps_loaded(self) -> None:
        """Fresh sweep figures are on the board."""

    def scenarios_loaded(self, sweep: str) -> None:
        """A fresh scenario list of `sweep` is on the board."""

    def resync(self) -> None:
        """The link (re)connected: everything shown may be stale."""

    def action_help(self) -> None:
        self.app.push_screen(Help(self.HELP_TITLE, self.KEY_HELP))

    def action_events(self) -> None:
        self.stamina.open_events(self.EVENT_FILTER)

    def action_back(self) -> None:
        """Leave a filter box first; otherwise go back a screen."""
        boxes = self.query(Input)
        if self.LIST_ID and any(box.has_focus for box in boxes):
            self.query_one(f"#{self.LIST_ID}").focus()
            return
        self.app.pop_screen()
