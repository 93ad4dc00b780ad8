"""Scenario detail: the timeline of turns and attempts, and everything about the highlighted attempt.

For an attempt it shows the prompt it got, the feedback it produced, the failing tests with their
request and response, on `d` the agent's code change against the attempt before it (a diff), the
harness exit status and durations, the model tokens and cost, the tails of the harness log and of
the log of the server start that tested it, and the workspace path on the daemon's host; a
collapsible pane holds the agent's transcript where its harness leaves one. The timeline (and the
highlighted attempt's texts) are refetched, at most twice a second, while events for this scenario
arrive.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.widgets import Collapsible, DataTable, Footer, Header, Static

from protocol import AttemptTexts, CodeChange, GetAttempt, GetCodeChange, GetScenario, ScenarioInfo
from protocol.messages import AttemptSummary, TranscriptItem
from tui.board import Change, infra_text
from tui.components.banner import Banner
from tui.components.table import RowCursorTable
from tui.markup import literal
from tui.screens.base import MonitorScreen

COLUMNS = (
    "turn",
    "attempt",
    "infra try",
    "outcome",
    "failure",
    "tests",
    "harness exit",
    "harness s",
    "suite s",
    "tokens",
    "cost",
)
OUTCOME_STYLE = {"pass": "green", "fail": "red", "infra": "bold magenta"}
_RUNNING = {"launched": "agent working", "harness_done": "testing"}  # an attempt still in progress
LOG_LINES = 40  # last lines of a log shown
TEXT_LIMIT = 6000  # characters of a prompt or feedback shown; the rest is in the store
DIFF_LIMIT = 40_000  # characters of a code diff shown; the viewer shows more
DIFF_STYLE = {"+": "green", "-": "red"}


class ScenarioScreen(MonitorScreen):
    AUTO_FOCUS = "#attempts"
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("e", "events", "Event log"),
        Binding("d", "code_change", "Code change"),
        Binding("question_mark", "help", "Help"),
    ]
    HELP_TITLE = "Scenario detail"
    KEY_HELP = [
        ("up/down", "pick an attempt; its prompt, feedback and failing tests show below"),
        ("d", "show or hide the attempt's code change against the attempt before it (a diff)"),
        ("tab", "focus the detail pane: up/down, pgup/pgdn, home/end then scroll it (so does the mouse wheel)"),
        ("tab tab", "focus the `agent transcript` title: enter (or a click) opens or closes it; tab again scrolls it"),
        ("shift+tab", "focus back towards the attempts"),
    ]

    def __init__(self, sweep: str, configuration: str, seed: int) -> None:
        super().__init__()
        self.sweep, self.configuration, self.seed = sweep, configuration, seed
        self.EVENT_FILTER = sweep
        self.info: ScenarioInfo | None = None
        self._stale = False
        self._shown_attempt: int | None = None  # the attempt whose texts the detail pane shows
        self._asked_attempt: int | None = None  # the attempt fetched last (its answer may still be on its way)
        self._texts: AttemptTexts | None = None
        self._transcript: tuple[TranscriptItem, ...] | None = None  # the transcript shown
        self._with_code = False  # the detail pane shows the attempt's code change too (`d`)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Banner(id="banner")
        yield Static(id="summary")
        table = RowCursorTable(id="attempts")
        for column in COLUMNS:
            table.add_column(column, key=column)
        yield table
        with VerticalScroll(id="texts"):
            yield Static("", id="attempt")
        with (
            Collapsible(title="agent transcript", collapsed=True, id="transcript"),
            VerticalScroll(id="transcript-scroll"),
        ):
            yield Static("", id="transcript-text")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"{self.sweep} · {self.configuration} · seed {self.seed}"
        self.load()
        self.set_interval(0.5, self._maybe_reload)

    # --- data ---------------------------------------------------------------------------------

    @work(exclusive=True, group="scenario")
    async def load(self) -> None:
        info = await self.stamina.ask(
            GetScenario(sweep=self.sweep, configuration=self.configuration, seed=self.seed), quiet=self.info is not None
        )
        if info is None:
            return
        self.info = info
        self._draw(info)
        table = self.query_one("#attempts", RowCursorTable)
        if self._shown_attempt is not None and table.row_count:
            # The highlighted attempt (not the one shown last: a key may have moved on) is asked again,
            # as its harness log may have grown and its server log may have been kept meanwhile.
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
            if key is not None:
                self.show_attempt(int(key))

    def _maybe_reload(self) -> None:
        if self._stale:
            self._stale = False
            self.load()

    def board_changed(self, changes: list[Change]) -> None:
        mine = self.stamina.board.scenarios.get(self.sweep, {})
        for change in changes:
            s = change.scenario
            if s is not None and mine.get(s.id) is s and s.configuration == self.configuration and s.seed == self.seed:
                self._stale = True
                return

    def resync(self) -> None:
        self._stale = True

    def _draw(self, info: ScenarioInfo) -> None:
        last_ok = max((a.turn for a in info.attempts if a.outcome == "pass"), default=-1)
        reason = f" · {literal(info.reason)}" if info.reason else ""
        self.query_one("#summary", Static).update(
            f"[b]{literal(self.configuration)}[/b] seed {self.seed} · {info.status} · {info.turns_passed} turns passed"
            f" (last passed turn {last_ok if last_ok >= 0 else '-'}) · {len(info.attempts)} attempts{reason}"
            f"\nworkspace {literal(info.workspace or '-')}"
        )
        self.query_one("#transcript", Collapsible).title = transcript_title(info)
        if info.transcript != self._transcript:  # new items: show them, the latest in view
            self._transcript = info.transcript
            self.query_one("#transcript-text", Static).update(render_transcript(info))
            self._transcript_to_end()
        table: DataTable[Any] = self.query_one("#attempts", DataTable)
        keep = table.cursor_row if table.row_count else len(info.attempts) - 1
        at_end = table.row_count == 0 or table.cursor_row == table.row_count - 1
        table.clear()
        for a in info.attempts:
            table.add_row(*_cells(a), key=str(a.id))
        if table.row_count:
            table.move_cursor(row=table.row_count - 1 if at_end else min(keep, table.row_count - 1))

    def _transcript_to_end(self) -> None:
        # Anchored: it follows the latest items as they are laid out, until the user scrolls up.
        self.query_one("#transcript-scroll", VerticalScroll).anchor()

    def on_collapsible_expanded(self, event: Collapsible.Expanded) -> None:
        self._transcript_to_end()  # laid out only now

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value
        # Compared with the attempt asked for last, not the one shown last: a fetch still under way for
        # another row must not be left to land after the cursor came back here.
        if key is not None and int(key) != self._asked_attempt:
            self.show_attempt(int(key))

    def _highlighted(self) -> int | None:
        """The attempt id of the highlighted row (None with no rows)."""
        table = self.query_one("#attempts", RowCursorTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return None if key is None else int(key)

    @work(exclusive=True, group="attempt")
    async def show_attempt(self, attempt_id: int) -> None:
        self._asked_attempt = attempt_id
        texts = await self.stamina.ask(GetAttempt(attempt_id=attempt_id))
        if texts is None or self.info is None or texts.id != attempt_id:
            return
        code = await self.stamina.ask(GetCodeChange(attempt_id=attempt_id)) if self._with_code else None
        if code is not None and code.id != attempt_id:
            return
        try:
            if attempt_id != self._highlighted():
                return  # an answer for a row the cursor has left: the highlighted row's own fetch shows it
            summary = next((a for a in self.info.attempts if a.id == attempt_id), None)
            self._shown_attempt, self._texts = attempt_id, texts
            self.query_one("#attempt", Static).update(render_attempt(texts, summary, code))
        except NoMatches:  # the screen was closed (its widgets removed) while the daemon answered
            return

    # --- actions ------------------------------------------------------------------------------

    def action_code_change(self) -> None:
        """Show (or hide) the highlighted attempt's code change below its failing tests."""
        self._with_code = not self._with_code
        attempt = self._highlighted()
        if attempt is not None:
            self.show_attempt(attempt)


ROLE_STYLE = {"user": "cyan", "assistant": "green", "tool": "yellow"}


def transcript_title(info: ScenarioInfo) -> str:
    """The transcript pane's title: how many items it holds, or that the harness left none."""
    if not info.transcript_path:
        return "agent transcript (none: this agent leaves no session file)"
    return f"agent transcript (last {len(info.transcript)} items of {info.transcript_path})"


def render_transcript(info: ScenarioInfo) -> str:
    """The transcript's items as Rich markup, oldest first: role, the tools called, the text."""
    if not info.transcript:
        return "[dim](no transcript)[/dim]"
    return "\n".join(_turn(item) for item in info.transcript)


def _turn(item: TranscriptItem) -> str:
    style = ROLE_STYLE.get(item.role, "magenta")
    tools = f" [dim]called {literal(', '.join(item.tools))}[/dim]" if item.tools else ""
    text = f"\n{literal(item.text)}" if item.text else ""
    return f"[b {style}]{literal(item.role)}[/b {style}]{tools}{text}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _cells(a: AttemptSummary) -> tuple[Any, ...]:
    failure = a.infra_kind if a.outcome == "infra" else ",".join(a.categories)
    tests = f"{a.passed_tests}/{a.total_tests}" if a.total_tests is not None else "-"
    outcome = a.outcome or _RUNNING.get(a.phase, a.phase)
    return (
        str(a.turn),
        str(a.attempt),
        str(a.infra_try),
        Text(outcome, style=OUTCOME_STYLE.get(outcome, "dim")),
        failure or "-",
        tests,
        "-" if a.harness_exit is None else str(a.harness_exit),
        _seconds(a.harness_seconds),
        _seconds(a.suite_seconds),
        (f"{a.tokens:,}" if a.tokens else "-") + (f" (compacted {a.compactions}x)" if a.compactions else ""),
        a.cost_text if a.tokens else "-",
    )


def _clip(text: str) -> str:
    text = text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + f"\n… ({len(text) - TEXT_LIMIT} more characters)"
    return literal(text)


def _log(title: str, text: str) -> list[str]:
    lines = text.rstrip("\n").splitlines()[-LOG_LINES:]
    return ["", f"[b u]{title}[/b u]", literal("\n".join(lines)) if lines else "[dim](empty)[/dim]"]


def render_code(code: CodeChange) -> list[str]:
    """An attempt's code change as markup: the summary, each file, what was cut, the diff (clipped); the agent's
    paths and lines shown literally (`literal`)."""
    parts = ["", f"[b u]code change[/b u] {literal(code.summary)}"]
    for f in code.files:
        lines = f" [green]+{f.added}[/green] [red]-{f.removed}[/red]" if f.added or f.removed else ""
        note = f" [dim]({literal(f.note)})[/dim]" if f.note else ""
        parts.append(f"  {f.status:<8} {literal(f.path)}{lines}{note}")
    parts += [f"[yellow]cut: {literal(c)}[/yellow]" for c in code.cut]
    diff = code.diff if len(code.diff) <= DIFF_LIMIT else code.diff[:DIFF_LIMIT]
    for line in diff.splitlines():
        style = "b" if line.startswith(("---", "+++", "@@")) else DIFF_STYLE.get(line[:1], "")
        parts.append(f"[{style}]{literal(line)}[/{style}]" if style else literal(line))
    if len(code.diff) > DIFF_LIMIT:
        parts.append(f"[dim]… ({len(code.diff) - DIFF_LIMIT} more characters of diff: see the viewer)[/dim]")
    return parts


def render_attempt(texts: AttemptTexts, a: AttemptSummary | None, code: CodeChange | None = None) -> str:
    """The highlighted attempt as Rich markup: outcome, harness, usage, prompt, feedback, failing tests, its code
    change (when asked for), logs."""
    parts = []
    if a is not None:
        line = (
            f"[b]turn {a.turn}, attempt {a.attempt}, infra try {a.infra_try}[/b]: "
            f"{a.outcome or _RUNNING.get(a.phase, a.phase)}"
        )
        if a.outcome == "infra" and a.infra_kind:
            line += f" - [magenta]{a.infra_kind}: {infra_text(a.infra_kind)}[/magenta]"
        parts.append(line)
        parts.append(
            f"harness exit {a.harness_exit if a.harness_exit is not None else '-'} after "
            f"{_seconds(a.harness_seconds)} s; suite {_seconds(a.suite_seconds)} s; "
            + (f"{a.tokens:,} tokens, {a.cost_text}" if a.tokens else "no model calls metered")
            + (f", context compacted {a.compactions}x" if a.compactions else "")
        )
    parts += ["", f"[b u]prompt ({texts.prompt_kind})[/b u]", _clip(texts.prompt)]
    if texts.feedback:
        parts += ["", "[b u]feedback sent[/b u]", _clip(texts.feedback)]
    if texts.failures:
        parts += ["", f"[b u]failing tests ({len(texts.failures)})[/b u]"]
        for f in texts.failures[:50]:
            parts += [
                f"[red]✗ {literal(f.name)}[/red] [dim]({f.category}, rule {literal(f.rule)})[/dim]",
                f"  {literal(f.message)}",
                f"  [b]request[/b]  {literal(f.request)}",
                f"  [b]response[/b] {f.status if f.status is not None else '-'} {literal(f.response[:500])}",
            ]
        if len(texts.failures) > 50:
            parts.append(f"… and {len(texts.failures) - 50} more")
    if code is not None:
        parts += render_code(code)
    parts += _log("harness log (tail)", texts.harness_log)
    if texts.server_log is not None:
        parts += _log("server log (tail, this attempt's start)", texts.server_log)
    else:
        pending = a is not None and a.phase != "tested"
        why = "kept once this attempt's server has run" if pending else "no server start recorded for this attempt"
        parts += ["", "[b u]server log[/b u]", f"[dim]({why})[/dim]"]
    return "\n".join(parts)
