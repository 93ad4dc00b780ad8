"""Event log: every event live, newest at the bottom, filterable; infrastructure failures stand out.

`/` filters by text (sweep, kind, scenario, failure); `i` shows only infrastructure failures and sweep
errors. The log keeps the board's last lines, including events replayed by the daemon on connect.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Header, Input

from tui.board import LOG_LINES, Change, LogLine
from tui.components.banner import Banner
from tui.components.rows import Cell, RowTable
from tui.screens.base import MonitorScreen

SEVERITY_STYLE = {"info": "", "ok": "green", "fail": "yellow", "infra": "bold magenta", "error": "bold red"}


class EventLogScreen(MonitorScreen):
    AUTO_FOCUS = "#log"
    BINDINGS = [
        Binding("slash", "filter", "Filter"),
        Binding("i", "infra", "Infra only"),
        Binding("escape", "back", "Back"),
        Binding("question_mark", "help", "Help"),
    ]
    HELP_TITLE = "Event log"
    LIST_ID = "log"
    KEY_HELP = [("/", "filter by text"), ("i", "show only infrastructure failures and errors (toggle)")]

    def __init__(self, sweep: str = "") -> None:
        super().__init__()
        self.needle = sweep
        self.infra_only = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Banner(id="banner")
        yield Input(value=self.needle, placeholder="filter the log", id="filter")
        yield RowTable((("time", 8), ("sweep", 16), ("kind", 18), ("event", 0)), id="log")
        yield Footer()

    def on_mount(self) -> None:
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
        table = self.query_one("#log", RowTable)
        table.set_rows((_key(line), _cells(line)) for line in self.stamina.board.lines(self.needle, self.infra_only))
        table.move_cursor(table.row_count - 1)
        self._title()

    def board_changed(self, changes: list[Change]) -> None:
        rows = [
            (_key(c.line), _cells(c.line))
            for c in changes
            if c.line is not None and c.line.matches(self.needle, self.infra_only)
        ]
        if rows:
            self.query_one("#log", RowTable).append(rows, LOG_LINES)

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


def _key(line: LogLine) -> str:
    return f"{line.seq}@{line.at}"


def _cells(line: LogLine) -> tuple[Cell, ...]:
    style = SEVERITY_STYLE.get(line.severity, "")
    return line.time, line.sweep, Text(line.kind, style=style), Text(line.text, style=style)
