"""What the monitor adds to the daemon's figures: progress, ETA, clocks, usage, logs, and layouts that fit.

Pilot tests run against a real in-process daemon with manual agents, which hold their attempts open
(prompts waiting for a person) so the clocks and counts can be read while scenarios are under way.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import Collapsible, DataTable, Static

from protocol import Event, ScenarioList, ScenarioRow, SweepInfo
from protocol.events import AttemptStarted, HarnessDone, LlmWait, watchdog_deadline
from protocol.kinds import SweepStatus
from protocol.messages import ConfigStatus
from staminad.daemon import views
from state.store import Store, Verdict
from tests.helpers.e2e import RECORDINGS
from tests.helpers.inprocess import events, running_daemon, submit, until
from tests.helpers.sweeps import sweep as run_in_process
from tests.helpers.sweeps import write_sweep
from tests.helpers.tui import open_only_scenario, settle
from tui.app import make_app
from tui.board import Board
from tui.components.confirm import Confirm
from tui.components.rows import RowTable
from tui.screens.overview import COLUMNS, _rows, bar, eta
from tui.screens.scenario import ScenarioScreen
from tui.screens.sweep import SweepScreen, span, state_words

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]
CLOCK = re.compile(r"\d+s")


def _config(finished: int, scenarios: int = 4) -> ConfigStatus:
    return ConfigStatus(
        name="c",
        scenarios=scenarios,
        finished=finished,
        mean_turns=0.0,
        se_turns=0.0,
        pass_rate=0.0,
        statuses={},
        infra={},
    )


def test_eta_is_the_pace_so_far_and_unknown_before_anything_finished() -> None:
    """ETA: elapsed per finished scenario times those left; '-' before the first and for a stopped sweep."""
    info = SweepInfo(
        sweep="s", status="running", fingerprint="f", configurations=(_config(1), _config(1)), created_at=1000.0
    )
    assert eta(info, now=1100.0) == "5m00s"  # 100 s for 2 of 8: 300 s for the 6 left
    assert (
        eta(
            SweepInfo(sweep="s", status="running", fingerprint="f", configurations=(_config(0),), created_at=1000.0),
            now=1100.0,
        )
        == "-"
    )
    assert (
        eta(
            SweepInfo(sweep="s", status="cancelled", fingerprint="f", configurations=(_config(1),), created_at=1000.0),
            now=1100.0,
        )
        == "-"
    )
    assert eta(SweepInfo(sweep="s", status="finished", fingerprint="f", configurations=(_config(4),)), 0) == "done"
    assert bar(2, 4).plain == "█████░░░░░ 2/4" and bar(0, 0).plain == "░░░░░░░░░░ 0/0"
    assert (span(42), span(187), span(7500), span(-3)) == ("42s", "3m07s", "2h05m", "0s")


def test_a_long_pause_is_not_counted_in_the_eta() -> None:
    """A sweep paused for hours has the ETA of one never paused with the same progress and running time."""
    configs = (_config(1), _config(1))
    never = SweepInfo(sweep="s", status="running", fingerprint="f", configurations=configs, created_at=1000.0)
    paused = SweepInfo(
        sweep="s",
        status="running",
        fingerprint="f",
        configurations=configs,
        created_at=1000.0 - 7200.0,
        paused_seconds=7200.0,
    )
    assert eta(paused, now=1100.0) == eta(never, now=1100.0) == "5m00s"


async def test_the_store_keeps_a_sweeps_pauses_for_its_eta(tmp_path: Path) -> None:
    """Pauses (fixed clocks) add up in the store; the sweep's figures carry them, the pause under way too."""
    async with await Store.open(tmp_path / "s.db") as store:
        await store.ensure_sweep("w", "w", "fp", "{}")
        await store.set_sweep_status("w", "paused", now=1000.0)
        await store.set_sweep_status("w", "paused", now=1500.0)  # pausing again keeps the first start
        await store.set_sweep_status("w", "running", now=4600.0)
        await store.set_sweep_status("w", "running", now=5000.0)  # resuming a running sweep adds nothing
        assert (await views.sweep_info(store, "w", now=9000.0)).paused_seconds == 3600.0
        await store.set_sweep_status("w", "paused", now=9000.0)
        assert (await views.sweep_info(store, "w", now=9100.0)).paused_seconds == 3700.0  # still paused
        await store.set_sweep_status("w", "cancelled", now=9200.0)  # ending a paused sweep ends its pause
        assert (await views.sweep_info(store, "w", now=99999.0)).paused_seconds == 3800.0


def test_events_restart_the_phase_clock_and_the_watchdog_counts_from_the_launch() -> None:
    """attempt_started sets the watchdog to launch + turn timeout; the harness ending stops it; phases restart."""
    board = Board()
    row = ScenarioRow(
        id=1,
        configuration="c",
        seed=0,
        status="running",
        turns_passed=0,
        turn=0,
        attempt=1,
        infra_try=0,
        phase="agent working",
        last_failure="",
        history="",
        reason="",
        since=50.0,
        deadline=70.0,
    )
    board.set_scenarios(ScenarioList(sweep="s", retries={"c": 2}, scenarios=(row,), turn_timeout=20.0))
    done = HarnessDone(
        scenario=1, configuration="c", seed=0, turn=0, attempt=1, exit=0, signal=None, harness_seconds=1.0
    )
    board.apply(Event(sweep="s", data=done, at=60.0, seq=1))
    s = board.find("s", 1)
    assert s is not None and (s.phase, s.since, s.deadline) == ("testing", 60.0, 0.0)
    again = AttemptStarted(scenario=1, configuration="c", seed=0, turn=0, attempt=2, infra_try=0)
    board.apply(Event(sweep="s", data=again, at=65.0, seq=2))
    assert (s.phase, s.since, s.deadline) == ("retrying", 65.0, 85.0)


def test_the_watchdog_countdown_moves_with_the_time_waited_on_model_outages() -> None:
    """An outage's wait (llm_wait) moves the countdown as the engine moves its bound: launch + timeout + waited."""
    board = Board()
    row = ScenarioRow(
        id=1,
        configuration="c",
        seed=0,
        status="running",
        turns_passed=0,
        turn=0,
        attempt=1,
        infra_try=0,
        phase="pending",
        last_failure="",
        history="",
        reason="",
    )
    board.set_scenarios(ScenarioList(sweep="s", retries={"c": 2}, scenarios=(row,), turn_timeout=600.0))
    started = AttemptStarted(scenario=1, configuration="c", seed=0, turn=0, attempt=1, infra_try=0)
    board.apply(Event(sweep="s", data=started, at=1000.0, seq=1))
    for seq, pause in ((2, 20.0), (3, 25.0)):
        wait = LlmWait(scenario=1, turn=0, reason="upstream answered 503", wait_seconds=pause, waited=0.0)
        board.apply(Event(sweep="s", data=wait, at=1100.0, seq=seq))
    board.apply(Event(sweep="s", data=wait, at=1100.0, seq=3))  # a replayed event moves nothing
    s = board.find("s", 1)
    assert s is not None and s.deadline == watchdog_deadline(1000.0, 600.0, 45.0) == 1645.0


async def test_the_sweeps_rows_carry_the_deadline_extended_by_recorded_outage_waits(tmp_path: Path) -> None:
    """A running attempt's recorded model calls waited 45 s on outages: its row's deadline is 45 s later."""
    async with await Store.open(tmp_path / "s.db") as store:
        await store.ensure_sweep("w", "w", "fp", '{"run": {"turn_timeout": 600}}')
        config = await store.ensure_configuration("w", "c", "codex", 2, "detailed")
        done, running = [(await store.ensure_scenario(config, seed)).id for seed in (0, 1)]
        first = await store.begin_attempt(done, 0, 1, 0, "initial", "p")
        await store.tested(first.id, Verdict(outcome="pass"))
        row = await store.begin_attempt(running, 0, 1, 0, "initial", "p")
        for scenario, attempt, waited in ((done, first.id, 300.0), (running, row.id, 20.0), (running, row.id, 25.0)):
            await store.llm_call(scenario, attempt, 0, "chat", "m", (1, 1, 0), 0.0, 200, 1.0, waited, False)
        listed = await views.scenario_list(store, "w")
    deadlines = {r.seed: r.deadline for r in listed.scenarios}
    assert deadlines == {0: 0.0, 1: watchdog_deadline(row.launched_at, 600.0, 45.0)}


async def test_a_resumed_attempts_row_counts_down_from_its_resume_as_the_engine_does(tmp_path: Path) -> None:
    """An attempt a restarted engine took up again is watched from then, with only the outages since added."""
    async with await Store.open(tmp_path / "s.db") as store:
        await store.ensure_sweep("w", "w", "fp", '{"run": {"turn_timeout": 600}}')
        config = await store.ensure_configuration("w", "c", "codex", 2, "detailed")
        scenario = (await store.ensure_scenario(config, 0)).id
        row = await store.begin_attempt(scenario, 0, 1, 0, "initial", "p")
        await store.llm_call(scenario, row.id, 0, "chat", "m", (1, 1, 0), 0.0, 200, 1.0, 300.0, False)
        resumed = await store.resumed(row.id)
        await store.db.execute("UPDATE llm_calls SET at = ? WHERE id = 1", (resumed - 1.0,))  # before the resume
        await store.llm_call(scenario, row.id, 0, "chat", "m", (1, 1, 0), 0.0, 200, 1.0, 20.0, False)
        listed = await views.scenario_list(store, "w")
    assert listed.scenarios[0].deadline == watchdog_deadline(row.launched_at, 600.0, 20.0, resumed) == resumed + 620.0


def test_a_stopped_sweep_shows_no_running_scenarios_whatever_the_rows_still_say() -> None:
    """Figures read while a cancel lands can still count running rows: a cancelled sweep shows '-' and no slots."""
    stale = ConfigStatus(
        name="c",
        scenarios=2,
        finished=1,
        mean_turns=1.0,
        se_turns=0.0,
        pass_rate=0.5,
        statuses={"running": 1, "done": 1},
        infra={},
    )
    cases: tuple[tuple[SweepStatus, str, str], ...] = (("running", "1", "running 1/4"), ("cancelled", "-", "cancelled"))
    for status, running, label in cases:
        info = SweepInfo(sweep="s", status=status, fingerprint="f", configurations=(stale,), parallel=4, active=1)
        head, row = _rows(info, now=0.0)  # the sweep's row, then its configuration's
        assert str(head[1 + COLUMNS.index("status")]) == label and str(row[1 + COLUMNS.index("status")]) == ""
        assert head[1 + COLUMNS.index("running")] == running and row[1 + COLUMNS.index("running")] == running


async def test_overview_progress_dialog_and_no_stale_running_after_a_cancel(tmp_path: Path) -> None:
    """Overview shows pending '-', End/Home move, the cancel dialog names its sweep, no stale running rows."""
    state = tmp_path / "st"
    held = write_sweep(tmp_path, "held", ["manual"], seeds="0-2", turns=1)
    other = write_sweep(tmp_path, "other", ["manual"], turns=1)
    async with running_daemon(state), events(state, ("held", "other")) as stream:
        await submit(state, held)
        await until(stream, "manual_prompt")
        await submit(state, other)
        app = make_app(state / "staminad.sock")
        async with app.run_test(size=(160, 48)) as pilot:
            table = app.screen.query_one("#sweeps", DataTable)
            await settle(
                pilot, lambda: table.row_count == 4 and all(s.configurations for s in app.board.sweeps.values())
            )
            held_row = next(i for i in range(4) if str(table.get_row_at(i)[0]) == "held")  # its configuration under it
            cells = table.get_row_at(held_row + 1)
            assert str(cells[COLUMNS.index("progress")]).endswith(" 0/3")
            assert (str(cells[COLUMNS.index("turns passed")]), str(cells[COLUMNS.index("pass rate")])) == ("-", "-")
            await pilot.press("end")
            assert table.cursor_row == 3
            await pilot.press("home")
            assert table.cursor_row == 0
            await pilot.press(*["down"] * (held_row + 1))  # on the configuration's row: `c` acts on its sweep
            await pilot.press("c")
            assert isinstance(app.screen, Confirm)
            question = app.screen.query_one("#question", Static)
            await pilot.pause()
            asked = str(question.render())
            assert "Cancel sweep held (running, 1 configuration, 0/3 scenarios finished)?" in asked
            lines = [strip.text.strip() for strip in question.render_lines(question.region.reset_offset)]
            shown = [line for line in lines if line]
            assert len(shown) >= 2 and " ".join(shown) == " ".join(asked.split())  # wrapped at spaces, nothing cut
            await pilot.press("y")
            await settle(pilot, lambda: app.board.sweeps["held"].status == "cancelled")
            await settle(
                pilot,
                lambda: (
                    str(table.get_row_at(held_row)[0]) == "held"
                    and str(table.get_row_at(held_row)[1]).startswith("cancelled")
                ),
            )
            assert str(table.get_row_at(held_row)[COLUMNS.index("running")]) == "-"
            assert str(table.get_row_at(held_row + 1)[COLUMNS.index("running")]) == "-"


async def test_sweep_screen_clocks_and_key_columns_at_100x30(tmp_path: Path) -> None:
    """Each running row shows its time in phase and the watchdog's time left; at 100x30 the key columns show."""
    state = tmp_path / "st"
    path = write_sweep(tmp_path, "clock", ["manual"], seeds="0-2", turns=1)
    async with running_daemon(state), events(state, ("clock",)) as stream:
        await submit(state, path)
        for _ in range(3):
            await until(stream, "manual_prompt")
        app = make_app(state / "staminad.sock")
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, lambda: "clock" in app.board.scenarios)
            await pilot.press("enter")
            assert isinstance(app.screen, SweepScreen)
            rows = app.screen.query_one("#scenarios", RowTable)
            await settle(pilot, lambda: rows.row_count == 3)
            for i in range(3):
                in_phase, watchdog = rows.get_row_at(i)[5], rows.get_row_at(i)[6]
                assert CLOCK.fullmatch(str(in_phase)), in_phase
                assert isinstance(watchdog, Text) and CLOCK.fullmatch(watchdog.plain), watchdog
                assert int(watchdog.plain[:-1]) <= 20  # the sweep's turn_timeout
            header = rows.render_line(0).text
            for column in ("configuration", "seed", "phase", "last failure", "history"):
                assert column in header, header
            assert "manual R=2 detailed" in rows.render_line(1).text
            await pilot.press("end")
            assert rows.cursor_row == 2
            await pilot.press("home")
            assert rows.cursor_row == 0


async def test_scenario_screen_shows_logs_workspace_and_usage(tmp_path: Path) -> None:
    """The scenario screen shows the workspace path, both log tails, and tokens and cost per attempt."""
    state = tmp_path / "st"
    path = write_sweep(tmp_path, "used", ["reference"], turns=1)
    async with running_daemon(state), events(state, ("used",)) as stream:
        await submit(state, path)
        await until(stream, "sweep_finished")
        app = make_app(state / "staminad.sock")
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, lambda: "used" in app.board.scenarios)
            await pilot.press("enter")
            rows = app.screen.query_one("#scenarios", RowTable)
            await settle(pilot, lambda: rows.row_count == 1)
            await pilot.press("enter")
            screen = app.screen
            assert isinstance(screen, ScenarioScreen)
            await settle(pilot, lambda: screen.info is not None and screen._shown_attempt is not None)
            assert screen.info is not None and Path(screen.info.workspace).is_dir()
            assert f"workspace {screen.info.workspace}" in str(screen.query_one("#summary", Static).render())
            text = str(screen.query_one("#attempt", Static).render())
            assert "harness log (tail)" in text and "server log (tail" in text and "no model calls metered" in text
            table = screen.query_one("#attempts", DataTable)
            assert [str(c) for c in table.get_row_at(0)[-2:]] == ["-", "-"]


async def test_scenario_screen_shows_the_agents_transcript_in_its_pane(tmp_path: Path) -> None:
    """A harness's session file in the sandbox's HOME shows, as turns with their tools, in a collapsible pane."""
    state = tmp_path / "st"
    path = write_sweep(tmp_path, "talk", ["reference"], turns=1)
    async with running_daemon(state), events(state, ("talk",)) as stream:
        await submit(state, path)
        await until(stream, "sweep_finished")
        # Its scenario is made a Claude Code one after the fact, whose HOME holds a real session capture.
        db = sqlite3.connect(state / "staminad.db")
        try:
            db.execute("UPDATE configurations SET agent = 'claude-code'")
            db.commit()
        finally:
            db.close()
        session = next((state / "sandboxes" / "talk").glob("*/workspace")) / ".home/.claude/projects/-workspace/s.jsonl"
        session.parent.mkdir(parents=True)
        shutil.copyfile(RECORDINGS / "claude-code-project.jsonl", session)
        app = make_app(state / "staminad.sock")
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, lambda: "talk" in app.board.scenarios)
            await pilot.press("enter")
            rows = app.screen.query_one("#scenarios", RowTable)
            await settle(pilot, lambda: rows.row_count == 1)
            await pilot.press("enter")
            screen = app.screen
            assert isinstance(screen, ScenarioScreen)
            await settle(pilot, lambda: screen.info is not None and bool(screen.info.transcript))
            pane = screen.query_one("#transcript", Collapsible)
            assert pane.collapsed and pane.title == f"agent transcript (last 6 items of {session})"
            pane.collapsed = False
            await pilot.pause()
            text = str(screen.query_one("#transcript-text", Static).render())
            assert "assistant called Bash" in text and "user\nNow make the following changes: none." in text
            assert text.rstrip().endswith("Nothing needs to change.")


async def test_scenario_detail_reply_carries_usage_and_log_tails(tmp_path: Path) -> None:
    """The daemon's scenario reply sums each attempt's model calls and carries the server log's tail."""
    path = write_sweep(tmp_path, "paid", ["reference"], turns=1)
    state = tmp_path / "st"
    await run_in_process(path, state)
    async with await Store.open(state / "staminad.db") as store:
        before = await views.scenario_info(store, "paid", "reference R=2 detailed", 0)
        first = before.attempts[0]
        scenario_id = (await views.find_scenario(store, "paid", "reference R=2 detailed", 0)).id
        for tokens in ((100, 20, 0), (30, 5, 0)):
            await store.llm_call(scenario_id, first.id, 0, "chat", "m", tokens, 0.25, 200, 0.1, 0.0, False)
        info = await views.scenario_info(store, "paid", "reference R=2 detailed", 0)
        texts = await views.attempt_texts(store, first.id)
    assert (before.attempts[0].tokens, before.attempts[0].cost) == (0, 0.0)
    assert (info.attempts[0].tokens, info.attempts[0].cost) == (155, 0.5)
    assert Path(info.workspace).is_dir() and isinstance(texts.harness_log, str)
    server_log = Path(info.workspace).parent / "control" / "server.log"
    assert texts.server_log is not None and server_log.exists()
    assert server_log.read_text(errors="replace").endswith(texts.server_log)


async def test_scenario_screen_shows_the_server_log_of_the_selected_attempt(tmp_path: Path) -> None:
    """Attempt 1's server crashed, attempt 2's ran: each attempt shows its own start's log, not the latest."""
    state = tmp_path / "st"
    path = write_sweep(tmp_path, "crash", ["fault:server-crash:once"], turns=1)
    async with running_daemon(state), events(state, ("crash",)) as stream:
        await submit(state, path)
        await until(stream, "sweep_finished")
        app = make_app(state / "staminad.sock")
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await open_only_scenario(app, pilot, "crash")
            await settle(pilot, lambda: screen.info is not None and screen._shown_attempt is not None)
            assert screen.info is not None
            assert [(a.turn, a.attempt, a.outcome) for a in screen.info.attempts] == [
                (0, 1, "fail"),
                (0, 2, "pass"),
                (1, 1, "pass"),
            ]
            first, second = (a.id for a in screen.info.attempts[:2])
            shown = screen.query_one("#attempt", Static)
            await pilot.press("up")
            await settle(pilot, lambda: screen._shown_attempt == second)
            head = "server log (tail, this attempt's start)"  # the last section (the feedback quotes the crash)
            assert head in str(shown.render()) and "SyntaxError" not in str(shown.render()).split(head)[1]
            await pilot.press("up")
            await settle(pilot, lambda: screen._shown_attempt == first)
            assert head in str(shown.render()) and "SyntaxError" in str(shown.render()).split(head)[1]


def test_a_failed_sweep_says_why_in_its_summary_and_dialogs() -> None:
    """A sweep in `error` reads "error: <the daemon's reason>"; any other status (or no reason) reads as it is."""
    failed = SweepInfo(sweep="s", status="error", fingerprint="f", reason="image staminabench/sandbox:x is missing")
    assert state_words(failed) == "error: image staminabench/sandbox:x is missing"
    assert state_words(SweepInfo(sweep="s", status="error", fingerprint="f")) == "error"
    assert state_words(SweepInfo(sweep="s", status="finished", fingerprint="f", reason="stale")) == "finished"
