"""Sweeps overview: each sweep's row, with its configurations grouped under it, and their figures so far.

The sweep's row holds what is the sweep's (its state, slots and queue, ETA from its pace since it was
submitted, totals); each configuration's row under it holds its progress bar, turns passed (mean +- SE over
the n scored scenarios, marked `so far` while some are unfinished or never ran) and pass rate once a
scenario is scored (`-` before, never zeros), scenarios running / failed and infra failures by kind. A
sweep that no longer runs shows no running scenarios. `h` hides cancelled sweeps, then finished ones too.
Pause, resume and cancel act on the highlighted sweep after a confirmation that names it.
"""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, Static

from protocol import Cancel, Pause, Resume, SweepInfo
from protocol.units import dollars
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
LIVE = ("running", "paused")
HIDING: tuple[tuple[str, ...], ...] = ((), ("cancelled",), ("cancelled", "finished"))  # what `h` cycles through
# a sweep whose scenarios may still be running
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
        Binding("h", "hide", "Hide ended"),
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
        ("h", "hide cancelled sweeps; again: finished ones too; again: show every sweep"),
        ("b", "the box: load, memory, disks, GPUs, endpoints, history"),
    ]

    def action_box(self) -> None:
        from tui.screens.box import BoxScreen

        self.app.push_screen(BoxScreen())

    def compose(self) -> ComposeResult:
        yield Header()
        yield Banner(id="banner")
        yield Static(_no_sweeps(), id="empty")
        table = RowCursorTable(id="sweeps")
        for column in COLUMNS:
            table.add_column(column, key=column)
        yield table
        yield Footer()

    def __init__(self) -> None:
        super().__init__()
        self.hiding = 0  # index into HIDING: which ended sweeps are left out
        self._stale = False  # fresh figures came while another screen covered this one

    def on_mount(self) -> None:
        self.redraw()

    def sweeps_loaded(self) -> None:
        # Under another screen (a sweep's, watched under load) a rebuilt table is work nobody sees, and a
        # covered screen's repaint makes the shown one repaint whole: redraw when this screen shows again.
        stack = self.app.screen_stack
        if all(above.styles.background.a < 1 for above in stack[stack.index(self) + 1 :]):  # shown, or seen through
            self.redraw()
        else:
            self._stale = True

    def on_screen_resume(self) -> None:
        if self._stale:
            self._stale = False
            self.redraw()

    def resync(self) -> None:
        self.redraw()

    def action_hide(self) -> None:
        self.hiding = (self.hiding + 1) % len(HIDING)
        self.redraw()

    def redraw(self) -> None:
        table: DataTable[Any] = self.query_one("#sweeps", DataTable)
        keep, row_at = self._cursor_key(), table.cursor_row
        table.clear()
        now = time.time()
        sweeps = list(self.stamina.board.sweeps.values())
        hidden = HIDING[self.hiding]
        shown = [info for info in sweeps if info.status not in hidden]
        keys = []
        for info in shown:
            for row in _rows(info, now):
                # Names come from sweep files (a model id may hold brackets): cells are plain text, never markup.
                table.add_row(*(Text(c) if isinstance(c, str) else c for c in row[1:]), key=row[0])
                keys.append(row[0])
        left_out = len(sweeps) - len(shown)
        what = " and ".join(hidden)
        self.sub_title = f"sweeps · {left_out} {what} hidden (h shows them)" if left_out else "sweeps"
        empty = self.query_one("#empty", Static)
        empty.update(_no_sweeps() if not sweeps else f"every sweep is {' or '.join(hidden)}: press h to show them")
        empty.display = not shown
        if table.row_count:
            table.move_cursor(row=keys.index(keep) if keep in keys else min(row_at, table.row_count - 1))

    def _cursor_key(self) -> str | None:
        table: DataTable[Any] = self.query_one("#sweeps", DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return None if key is None else str(key)

    def _selected(self) -> str | None:
        key = self._cursor_key()
        if key is None:
            self.notify("no sweep selected", severity="warning")
            return None
        return key.split("\t")[0]

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


def _no_sweeps() -> str:
    return f"no sweeps yet: submit one with `{hint('submit SWEEP.toml')}`"


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
    """The sweep's row (its state, ETA and totals, once), then one row per configuration under it."""
    # A sweep the daemon runs shows its own limit and its queue: "running 2/4, 6 queued".
    slots = (
        f" {info.active}/{info.parallel}" + (f", {info.queued} queued" if info.queued else "")
        if info.parallel and info.status in LIVE
        else ""
    )
    # A pause with a reason is the daemon's (a full state disk): its first words say which.
    why = f" ({info.reason.split(':')[0]})" if info.status == "paused" and info.reason else ""
    status = Text(info.status + why + slots, style=STATUS_STYLE.get(info.status, ""))
    configs = info.configurations
    if not configs:
        return [(f"{info.sweep}\t", info.sweep, status, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-")]
    live = info.status in LIVE  # the running counts of a sweep that no longer runs are stale
    infra: dict[str, int] = {}
    for c in configs:
        for kind, n in c.infra.items():
            infra[kind] = infra.get(kind, 0) + n
    tokens = sum(c.tokens for c in configs)
    plural = "s" if len(configs) != 1 else ""
    rows: list[tuple[Any, ...]] = [
        (
            f"{info.sweep}\t",
            Text(info.sweep, style="bold"),
            status,
            Text(f"{len(configs)} configuration{plural}", style="dim"),
            bar(sum(c.finished for c in configs), sum(c.scenarios for c in configs)),
            eta(info, now),
            "",
            "",
            _count(sum(c.statuses.get("running", 0) for c in configs) if live else 0),
            *_failures({k: sum(c.statuses.get(k, 0) for c in configs) for k in ("failed", "infra_failed")}, infra),
            f"{tokens:,}" if tokens else "-",
            dollars(
                sum(c.cost for c in configs),
                sum(c.calls for c in configs),
                sum(c.estimated_calls for c in configs),
                sum(c.unpriced_calls for c in configs),
            )
            if tokens
            else "-",
        )
    ]
    for n, c in enumerate(configs):
        # Figures are over the scored scenarios only (the daemon's one rule): none scored is `-`, not zeros;
        # before the sweep ends they are marked as not final.
        scored = c.scored > 0
        so_far = " so far" if scored and (c.unfinished or c.never_run) else ""
        rows.append(
            (
                f"{info.sweep}\t{c.name}",
                "",
                "",
                Text.assemble(("└ " if n == len(configs) - 1 else "├ ", "dim"), c.name),
                bar(c.finished, c.scenarios),
                "",
                Text.assemble(f"{c.mean_turns:5.1f} ± {c.se_turns:4.1f} n={c.scored}", (so_far, "yellow"))
                if scored
                else "-",
                f"{c.pass_rate:4.0%}" if scored else "-",
                _count(c.statuses.get("running", 0) if live else 0),
                *_failures(c.statuses, c.infra),
                f"{c.tokens:,}" if c.tokens else "-",
                c.cost_text if c.tokens else "-",
            )
        )
    return rows


def _count(n: int) -> str:
    return str(n) if n else "-"


def _failures(statuses: dict[str, int], infra: dict[str, int]) -> tuple[str, Text, Text]:
    """The failed and infra failed (scenarios) and infra failures by kind (attempts) cells."""
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(infra.items())) or "-"
    ended = statuses.get("infra_failed", 0)
    return (
        str(statuses.get("failed", 0)),
        Text(str(ended), style="bold red" if ended else ""),
        Text(kinds, style="yellow" if infra else "dim"),
    )
