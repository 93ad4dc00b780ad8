"""Sweep view: one row per scenario, redrawn row by row as its events arrive.

Each row shows the current turn, phase, attempt i of R+1, infra retries used, the last failure and
the turn history (P passed, R passed after retries, F failed, I gave up on infrastructure), how long
the scenario has been in its phase and how long before the turn watchdog ends the running attempt
(both counted on this machine's clock every second). Rows can
be sorted (`s` cycles the order) and filtered (`/`); `t` retries a scenario stuck on infrastructure.
"""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Header, Input, Static

from protocol import EngineInfo, RetryScenario, SweepInfo
from tui.board import INFRA_TEXT, Change, Scenario, label
from tui.components.banner import Banner
from tui.components.confirm import Confirm
from tui.components.rows import RowTable
from tui.markup import literal
from tui.screens.base import MonitorScreen

# At 150 columns every column shows; narrower, the optional ones go (configuration then shrinks).
COLUMNS = (
    ("configuration", 36),
    ("seed", 5),
    ("status", 12),
    ("turn", 5),
    ("phase", 20),
    ("in phase", 8),
    ("watchdog", 8),
    ("attempt", 8),
    ("infra", 6),
    ("last failure", 20),
    ("history", 0),
)
HIDE_WHEN_NARROW = (2, 8, 3, 7, 6, 5)  # status, infra, turn, attempt, watchdog, in phase: the rest must show
FINISHED = ("done", "failed", "infra_failed", "capped", "cancelled")
HISTORY_WIDTH = 40
CLOCK_SLICES = 10  # ticks a second among which the clocks' repaint is spread (each row once a second)
PHASE_STYLE = {
    "agent working": "green",
    "retrying": "yellow",
    "infra retry": "bold magenta",
    "infra wait": "bold magenta",
    "server starting": "cyan",
    "testing": "cyan",
    "feedback": "yellow",
    "done": "bold green",
    "failed": "bold red",
    "infra_failed": "bold red reverse",
    "pending": "dim",
    "passed": "green",
    "waiting on the model": "bold magenta",
    "capped": "bold cyan",
}
HISTORY_STYLE = {"P": "green", "R": "yellow", "F": "bold red", "I": "bold magenta", "C": "bold cyan"}
PHASE_ORDER = (
    "infra_failed",
    "waiting on the model",
    "infra wait",
    "infra retry",
    "feedback",
    "retrying",
    "testing",
    "server starting",
    "agent working",
    "waiting for a person",
    "passed",
    "pending",
    "capped",
    "failed",
    "done",
)
SORTS: tuple[tuple[str, Any], ...] = (
    ("configuration, seed", lambda s: (s.configuration, s.seed)),
    ("turn (lowest first)", lambda s: (s.turn, s.configuration, s.seed)),
    ("phase (trouble first)", lambda s: (PHASE_ORDER.index(s.phase) if s.phase in PHASE_ORDER else 99, s.seed)),
    ("turns passed (most first)", lambda s: (-s.turns_passed, s.configuration, s.seed)),
)


class SweepScreen(MonitorScreen):
    AUTO_FOCUS = "#scenarios"
    BINDINGS = [
        Binding("s", "sort", "Sort"),
        Binding("slash", "filter", "Filter"),
        Binding("t", "retry", "Retry infra"),
        Binding("e", "events", "Event log"),
        Binding("escape", "back", "Back"),
        Binding("question_mark", "help", "Help"),
    ]
    LIST_ID = "scenarios"
    KEY_HELP = [
        ("enter", "open the highlighted scenario"),
        ("s", "cycle the sort order"),
        ("/", "filter rows by configuration, phase, status or failure"),
        ("t", "retry a scenario that used up its infra retries"),
    ]

    def __init__(self, sweep: str) -> None:
        super().__init__()
        self.sweep = sweep
        self.sort_index = 0
        self.needle = ""
        self._summary_text = ""
        self._slice = 0  # the slice of rows whose clocks the next tick repaints
        self.HELP_TITLE, self.EVENT_FILTER = f"Sweep {sweep}", sweep

    def compose(self) -> ComposeResult:
        yield Header()
        yield Banner(id="banner")
        yield Static(id="summary")
        yield Input(placeholder="filter: configuration, phase, status or failure", id="filter")
        yield RowTable(COLUMNS, id="scenarios", optional=HIDE_WHEN_NARROW, shrink=0)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"sweep {self.sweep}"
        self.query_one("#filter").display = False
        if self.sweep not in self.stamina.board.scenarios:
            self.stamina.need_scenarios(self.sweep)
        self.redraw()
        self.set_interval(1.0 / CLOCK_SLICES, self._tick)

    def _tick(self) -> None:
        """The clocks move: repaint the time columns of the scenarios still under way (one line each), a slice of
        them per tick, so each moves once a second and no one frame redraws every row (events wait behind it)."""
        self._slice = (self._slice + 1) % CLOCK_SLICES
        self.query_one("#scenarios", RowTable).update_rows(
            (str(s.id), self._cells(s))
            for s in self.stamina.board.scenarios.get(self.sweep, {}).values()
            if s.id % CLOCK_SLICES == self._slice and s.status not in FINISHED and s.since
        )

    # --- drawing ------------------------------------------------------------------------------

    def _scenarios(self) -> list[Scenario]:
        rows = [s for s in self.stamina.board.scenarios.get(self.sweep, {}).values() if self._matches(s)]
        return sorted(rows, key=SORTS[self.sort_index][1])

    def _matches(self, s: Scenario) -> bool:
        if not self.needle:
            return True
        hay = f"{s.configuration} {s.seed} {s.status} {s.phase} {s.last_failure} {s.engine}".lower()
        return all(word in hay for word in self.needle.lower().split())

    def _cells(self, s: Scenario) -> tuple[Any, ...]:
        most = self.stamina.board.max_attempts(self.sweep, s.configuration)
        history = s.history[-HISTORY_WIDTH:]
        text = Text("…" if len(s.history) > HISTORY_WIDTH else "")
        for ch in history:
            text.append(ch, style=HISTORY_STYLE.get(ch, ""))
        now = time.time()
        under_way = s.status not in FINISHED
        in_phase = span(now - s.since) if under_way and s.since else "-"
        left = s.deadline - now if under_way and s.deadline else None
        watchdog = Text("-" if left is None else span(left), style="" if left is None or left > 60 else "bold red")
        return (
            s.configuration,
            str(s.seed),
            s.status,
            str(s.turn),
            Text(s.phase, style=PHASE_STYLE.get(s.phase, "")),
            in_phase,
            watchdog,
            f"{s.attempt}/{most}" if most else str(s.attempt),
            str(s.infra_try) if s.infra_try else "-",
            Text(s.last_failure or "-", style="magenta" if s.last_failure in INFRA_TEXT else ""),
            text,
        )

    def redraw(self) -> None:
        self.query_one("#scenarios", RowTable).set_rows((str(s.id), self._cells(s)) for s in self._scenarios())
        self._summary()

    def _summary(self) -> None:
        info = self.stamina.board.sweeps.get(self.sweep)
        everything = self.stamina.board.scenarios.get(self.sweep, {})
        shown = self.query_one("#scenarios", RowTable).row_count
        status = literal(state_words(info)) if info else "?"
        text = (
            f"[b]{self.sweep}[/b] {status} · {shown} of {len(everything)} scenarios shown · sorted by "
            f"{SORTS[self.sort_index][0]}"
            + (f" · filter: {self.needle!r}" if self.needle else "")
            + "".join(_engine(e) for e in (info.engines if info else ()))
        )
        if text != self._summary_text:  # an update lays the screen out again, each second under load
            self._summary_text = text
            self.query_one("#summary", Static).update(text)

    def board_changed(self, changes: list[Change]) -> None:
        mine = self.stamina.board.scenarios.get(self.sweep, {})
        moved = {id(c.scenario): c.scenario for c in changes if c.scenario is not None}
        rows = [(str(s.id), self._cells(s)) for s in moved.values() if mine.get(s.id) is s]  # this sweep's, as held
        missing = self.query_one("#scenarios", RowTable).update_rows(rows)
        if any(self._matches(mine[int(key)]) for key in missing):
            self.redraw()  # a scenario that now passes the filter, or one the list did not have

    def sweeps_loaded(self) -> None:
        self._summary()

    def scenarios_loaded(self, sweep: str) -> None:
        if sweep == self.sweep:
            self.redraw()

    def resync(self) -> None:
        self.stamina.need_scenarios(self.sweep)

    # --- actions ------------------------------------------------------------------------------

    def _selected(self) -> Scenario | None:
        key = self.query_one("#scenarios", RowTable).cursor_key
        return None if key is None else self.stamina.board.find(self.sweep, int(key))

    def action_open(self) -> None:
        from tui.screens.scenario import ScenarioScreen

        s = self._selected()
        if s is not None:
            self.app.push_screen(ScenarioScreen(self.sweep, s.configuration, s.seed))

    @on(RowTable.Selected, "#scenarios")
    def _row_selected(self) -> None:
        self.action_open()

    def action_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(SORTS)
        self.redraw()

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.needle = event.value.strip()
        self.redraw()

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self.query_one("#scenarios").focus()
        if not self.needle:
            self.query_one("#filter").display = False

    def action_retry(self) -> None:
        s = self._selected()
        if s is None:
            return
        if s.status != "infra_failed":
            self.notify(
                f"{label(s)} is {s.status}; only a scenario that used up its infra retries can be retried",
                severity="warning",
            )
            return

        async def act(yes: bool | None) -> None:
            if yes:
                reply = await self.stamina.ask(
                    RetryScenario(sweep=self.sweep, configuration=s.configuration, seed=s.seed)
                )
                if reply is not None:
                    self.notify(reply.detail)
                    self.stamina.resync()

        self.app.push_screen(
            Confirm(
                f"Retry {label(s)}? It gets another round of infra retries (last failure: {s.last_failure or '-'})."
            ),
            act,
        )


def state_words(info: SweepInfo) -> str:
    """The sweep's status, with the daemon's one-line reason when it ended in `error` or waits on a full disk."""
    return f"{info.status}: {info.reason}" if info.status in ("error", "paused") and info.reason else info.status


def _engine(e: EngineInfo) -> str:
    """One engine of a sweep spread over several, in the summary line: its scenarios and slots, or that it is down."""
    health = f"{e.scenarios} here, {e.used}/{e.slots} slots" if e.healthy else "[b red]not answering[/b red]"
    paused = f", {e.waiting} scenarios paused until it answers" if e.down_since else ""
    return f"\n[b]engine[/b] {literal(e.url)}: {health}{paused}"


def span(seconds: float) -> str:
    """A duration as people read it on a clock: 42s, 3m07s, 2h05m (never negative)."""
    seconds = max(int(seconds), 0)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
