"""Event log: every event live, newest at the bottom, filterable; infrastructure failures stand out.

`/` filters by text (sweep, kind, scenario, failure); `i` shows only infrastructure failures and sweep
errors. The log keeps the board's last lines, including events replayed by the daemon on connect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input

from tui.board import LOG_LINES, Change, LogLine
from tui.components.banner import Banner
from tui.components.help import Help

if TYPE_CHECKING:
    from tui.app import StaminaApp

SEVERITY_STYLE = {"info": "", "ok": "green", "fail": "yellow", "infra": "bold magenta", "error": "bold red"}


class EventLogScreen(Screen[None]):
    AUTO_FOCUS = "#log"
    BINDINGS = [
        Binding("slash", "filter", "Filter"),
        Binding("i", "infra", "Infra only"),
        Binding("escape", "back", "Back"),
        Binding("question_mark", "help", "Help"),
    ]
    KEY_HELP = [("/", "filter by text"), ("i", "show only infrastructure failures and errors (toggle)")]

    def __init__(self, sweep: str = "") -> None:
        super().__init__()
        self.needle = sweep
        self.infra_only = False

    @property
    def stamina(self) -> StaminaApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Banner(id="banner")
        yield Input(value=self.needle, placeholder="filter the log", id="filter")
        table: DataTable[Any] = DataTable(id="log", cursor_type="row")
        for column in ("time", "sweep", "kind", "event"):
            table.add_column(column, key=column)
        yield table
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Banner).show(self.stamina.connected, self.stamina.status_text)
        self.query_one("#filter").display = bool(self.needle)
        self.redraw()
        self.query_one("#log").focus()

    def _title(self) -> None:
        parts = ["event log"]
        if self.needle:
            parts.append(f"filter {self.needle!r}")
        if self.infra_only:
            parts.append("infra failures only")
        self.sub_title = " · ".join(parts)

    def redraw(self) -> None:
        table: DataTable[Any] = self.query_one("#log", DataTable)
        table.clear()
        for line in self.stamina.board.lines(self.needle, self.infra_only):
            table.add_row(*_cells(line))
        table.move_cursor(row=table.row_count - 1)
        self._title()

    def board_changed(self, change: Change) -> None:
        line = change.line
        if line is None or not line.matches(self.needle, self.infra_only):
            return
        table: DataTable[Any] = self.query_one("#log", DataTable)
        follow = table.cursor_row >= table.row_count - 1
        table.add_row(*_cells(line))
        if table.row_count > LOG_LINES:
            table.remove_row(next(iter(table.rows)))
        if follow:
            table.move_cursor(row=table.row_count - 1)

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        if event.value.strip() != self.needle:
            self.needle = event.value.strip()
            self.redraw()

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self.query_one("#log").focus()

    def action_infra(self) -> None:
        self.infra_only = not self.infra_only
        self.redraw()

    def action_back(self) -> None:
        if self.query_one("#filter", Input).has_focus:
            self.query_one("#log").focus()
            return
        self.app.pop_screen()

    def action_help(self) -> None:
        self.app.push_screen(Help("Event log", self.KEY_HELP))


def _cells(line: LogLine) -> tuple[Any, ...]:
    style = SEVERITY_STYLE.get(line.severity, "")
    return line.time, line.sweep, Text(line.kind, style=style), Text(line.text, style=style)
