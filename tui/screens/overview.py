"""Sweeps overview: one row per sweep and configuration with its progress and figures so far.

Shows each configuration's progress bar, the sweep's ETA (from its pace since it was submitted), turns
passed (mean +- SE over the n scored scenarios, marked `so far` while some are unfinished or never ran) and
pass rate once a scenario is scored (`-` before, never zeros), scenarios running /
failed and infra failures by kind. A sweep that no longer runs shows no running scenarios. Pause,
resume and cancel act on the highlighted sweep after a confirmation that names it.
"""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, Static

from protocol import Cancel, Pause, Resume, SweepInfo
from protocol.usage import hint
from tui.components.banner import Banner
from tui.components.confirm import Confirm
from tui.components.table import RowCursorTable
from tui.screens.base import MonitorScreen
from tui.screens.sweep import span, state_words

COLUMNS = (
    "sweep",
    "status",
    "configuration",
    "progress",
    "ETA",
    "turns passed",
    "pass rate",
    "running",
    "failed",
    "infra failed",
    "infra failures",
    "tokens",
    "cost",
)
BAR = 10  # cells of a progress bar
LIVE = ("running", "paused")  # a sweep whose scenarios may still be running
STATUS_STYLE = {
    "running": "bold green",
    "paused": "bold yellow",
    "finished": "cyan",
    "cancelled": "dim",
    "error": "bold red",
}


class OverviewScreen(MonitorScreen):
    AUTO_FOCUS = "#sweeps"
    BINDINGS = [
        Binding("enter", "open", "Open sweep", show=False),
        Binding("p", "pause", "Pause"),
        Binding("r", "resume", "Resume"),
        Binding("c", "cancel", "Cancel"),
        Binding("e", "events", "Event log"),
        Binding("b", "box", "Box", show=False),
        Binding("question_mark", "help", "Help"),
    ]
    HELP_TITLE = "Sweeps overview"
    KEY_HELP = [
        ("enter", "open the highlighted sweep"),
        ("p", "pause the sweep (running attempts finish)"),
        ("r", "resume a paused sweep"),
        ("c", "cancel the sweep"),
        ("b", "the box: load, memory, disks, GPUs, endpoints, history"),
    ]

    def action_box(self) -> None:
        from tui.screens.box import BoxScreen

        self.app.push_screen(BoxScreen())

    def compose(self) -> ComposeResult:
        yield Header()
        yield Banner(id="banner")
        yield Static(f"no sweeps yet: submit one with `{hint('submit SWEEP.toml')}`", id="empty")
        table = RowCursorTable(id="sweeps")
        for column in COLUMNS:
            table.add_column(column, key=column)
        yield table
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "sweeps"
        self.redraw()

    def sweeps_loaded(self) -> None:
        self.redraw()

    def resync(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        table: DataTable[Any] = self.query_one("#sweeps", DataTable)
        keep = table.cursor_row
        table.clear()
        now = time.time()
        for info in self.stamina.board.sweeps.values():
            for row in _rows(info, now):
                # Names come from sweep files (a model id may hold brackets): cells are plain text, never markup.
                table.add_row(*(Text(c) if isinstance(c, str) else c for c in row[1:]), key=row[0])
        self.query_one("#empty").display = not self.stamina.board.sweeps
        if table.row_count:
            table.move_cursor(row=min(keep, table.row_count - 1))

    def _selected(self) -> str | None:
        table: DataTable[Any] = self.query_one("#sweeps", DataTable)
        if not table.row_count:
            self.notify("no sweep selected", severity="warning")
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return None if key is None else key.split("\t")[0]

    def action_open(self) -> None:
        from tui.screens.sweep import SweepScreen

        sweep = self._selected()
        if sweep is not None:
            self.app.push_screen(SweepScreen(sweep))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    def _what(self, sweep: str) -> str:
        """The sweep's size and state in a few words, so a dialog says which row it acts on."""
        info = self.stamina.board.sweeps.get(sweep)
        if info is None:
            return "unknown"
        total = sum(c.scenarios for c in info.configurations)
        done = sum(c.finished for c in info.configurations)
        names = len(info.configurations)
        plural = "s" if names != 1 else ""
        return f"{state_words(info)}, {names} configuration{plural}, {done}/{total} scenarios finished"

    def _confirmed(self, question: str, message: Any, done: str) -> None:
        async def act(yes: bool | None) -> None:
            if yes and await self.stamina.ask(message) is not None:
                self.notify(done)
                self.stamina.resync()

        self.app.push_screen(Confirm(question), act)

    def action_pause(self) -> None:
        sweep = self._selected()
        if sweep is not None:
            self._confirmed(
                f"Pause sweep {sweep} ({self._what(sweep)})? Running attempts finish; no new ones start.",
                Pause(sweep=sweep),
                f"paused {sweep}",
            )

    def action_resume(self) -> None:
        sweep = self._selected()
        if sweep is not None:
            self._confirmed(f"Resume sweep {sweep} ({self._what(sweep)})?", Resume(sweep=sweep), f"resumed {sweep}")

    def action_cancel(self) -> None:
        sweep = self._selected()
        if sweep is not None:
            self._confirmed(
                f"Cancel sweep {sweep} ({self._what(sweep)})? Its scenarios stop now; results so far are kept.",
                Cancel(sweep=sweep),
                f"cancelled {sweep}",
            )


def bar(done: int, total: int) -> Text:
    """A progress bar of BAR cells with the count after it: `█████░░░░░ 4/8`."""
    filled = round(BAR * done / total) if total else 0
    return Text.assemble(("█" * filled, "green"), ("░" * (BAR - filled), "dim"), f" {done}/{total}")


def eta(info: SweepInfo, now: float) -> str:
    """Time left at the pace so far (time running since submission per finished scenario); `-` when unknowable.

    Time paused is not running time: it is left out of the pace.
    """
    total = sum(c.scenarios for c in info.configurations)
    done = sum(c.finished for c in info.configurations)
    if info.status != "running" or not info.created_at or not 0 < done < total:
        return "done" if total and done == total else "-"
    running = max(0.0, now - info.created_at - info.paused_seconds)
    return span(running / done * (total - done))


def _rows(info: SweepInfo, now: float) -> list[tuple[Any, ...]]:
    # A sweep the daemon runs shows its own limit and its queue: "running 2/4, 6 queued".
    slots = (
        f" {info.active}/{info.parallel}" + (f", {info.queued} queued" if info.queued else "")
        if info.parallel and info.status in LIVE
        else ""
    )
    # A pause with a reason is the daemon's (a full state disk): its first words say which.
    why = f" ({info.reason.split(':')[0]})" if info.status == "paused" and info.reason else ""
    status = Text(info.status + why + slots, style=STATUS_STYLE.get(info.status, ""))
    if not info.configurations:
        return [(f"{info.sweep}\t", info.sweep, status, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-")]
    rows = []
    for n, c in enumerate(info.configurations):
        infra = ", ".join(f"{k} {v}" for k, v in sorted(c.infra.items())) or "-"
        # Figures are over the scored scenarios only (the daemon's one rule): none scored is `-`, not zeros;
        # before the sweep ends they are marked as not final.
        scored = c.scored > 0
        so_far = " so far" if scored and (c.unfinished or c.never_run) else ""
        running = c.statuses.get("running", 0) if info.status in LIVE else 0  # stale rows of a cancelled sweep
        rows.append(
            (
                f"{info.sweep}\t{c.name}",
                info.sweep,
                status,
                c.name,
                bar(c.finished, c.scenarios),
                eta(info, now) if n == 0 else "",
                Text.assemble(f"{c.mean_turns:5.1f} ± {c.se_turns:4.1f} n={c.scored}", (so_far, "yellow"))
                if scored
                else "-",
                f"{c.pass_rate:4.0%}" if scored else "-",
                str(running) if running else "-",
                str(c.statuses.get("failed", 0)),
                Text(
                    str(c.statuses.get("infra_failed", 0)), style="bold red" if c.statuses.get("infra_failed") else ""
                ),
                Text(infra, style="yellow" if c.infra else "dim"),
                f"{c.tokens:,}" if c.tokens else "-",
                f"${c.cost:.2f}" if c.tokens else "-",
            )
        )
    return rows
