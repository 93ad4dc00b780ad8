"""What the socket says about scenarios: where each stands, an operator's infra retry, event replay."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from protocol import (
    Cancel,
    ErrorReply,
    GetAttempt,
    GetCodeChange,
    GetScenario,
    GetSweep,
    ListScenarios,
    Ok,
    Ping,
    RetryScenario,
    ScenarioList,
    Submit,
    Subscribe,
    SweepInfo,
)
from protocol.client import Client
from protocol.events import ManualPrompt, ScenarioFinished
from protocol.kinds import AttemptStep, FailureCategory, InfraKind, Outcome, ScenarioStatus
from protocol.messages import Message, RequestFor
from staminad.commands.clients import info_lines
from staminad.daemon.views import scenario_list
from staminad.engine.standing import scenario_row, turn_timeout
from state import Store
from state.scenarios import StoredScenario as Stored
from state.store import Progress
from tests.helpers.inprocess import events, request, running_daemon, submit, until
from tests.helpers.sweeps import write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]


def _p(
    turn: int,
    attempt: int,
    outcome: Outcome | None,
    phase: AttemptStep = "tested",
    infra_try: int = 0,
    kind: InfraKind | None = None,
    categories: tuple[FailureCategory, ...] = (),
) -> Progress:
    return Progress(
        scenario_id=1,
        turn=turn,
        attempt=attempt,
        infra_try=infra_try,
        phase=phase,
        outcome=outcome,
        infra_kind=kind,
        categories=categories,
    )


def _stored(status: ScenarioStatus) -> Stored:
    return Stored(id=1, config_id=1, seed=3, status=status, turns_passed=2, reason="", sandbox={})


def test_scenario_row_history_and_phase() -> None:
    """Turns read P (first attempt), R (after feedback); a failed attempt means feedback; a launch means work."""
    rows = [
        _p(0, 1, "pass"),
        _p(1, 1, "fail", categories=("validation", "rename")),
        _p(1, 2, "pass"),
        _p(2, 1, "infra", kind="self_kill"),
    ]
    row = scenario_row("c", _stored("running"), rows)
    assert (row.history, row.phase, row.last_failure, row.turn) == ("PR", "infra wait", "self_kill", 2)
    row = scenario_row("c", _stored("running"), [*rows, _p(2, 1, None, phase="launched", infra_try=1)])
    assert (row.phase, row.infra_try) == ("infra retry", 1)
    row = scenario_row("c", _stored("running"), [*rows[:2], _p(1, 2, None, phase="harness_done")])
    assert (row.phase, row.last_failure) == ("testing", "validation,rename")
    assert scenario_row("c", _stored("failed"), rows[:2]).history == "PF"
    assert scenario_row("c", _stored("pending"), []).phase == "pending"


def test_a_failure_a_later_pass_recovered_from_is_no_last_failure() -> None:
    """A scenario whose failed attempts were followed by passes shows no last failure (never "done (rename)")."""
    rows = [_p(0, 1, "pass"), _p(1, 1, "fail", categories=("rename",)), _p(1, 2, "pass")]
    assert scenario_row("c", _stored("done"), rows).last_failure == ""
    infra = [_p(0, 1, "infra", kind="self_kill"), _p(0, 1, "pass", infra_try=1)]
    assert scenario_row("c", _stored("done"), infra).last_failure == ""
    ended = [*rows, _p(2, 1, "fail", categories=("validation",)), _p(2, 2, "fail", categories=("enum_handling",))]
    assert scenario_row("c", _stored("failed"), ended).last_failure == "enum_handling"


def test_the_turn_timeout_is_read_from_the_stored_sweep_file(caplog: pytest.LogCaptureFixture) -> None:
    """The turn timeout comes from the stored sweep file: 0 if absent, 0 and a warning if unreadable."""
    assert turn_timeout('{"name": "a", "run": {"turn_timeout": 20}}', "a") == 20.0
    assert turn_timeout('{"name": "b", "run": {}}', "b") == 0.0 and not caplog.records
    assert turn_timeout('{"name": "c", "run": {"turn_timeout": "soon"}}', "c") == 0.0
    assert turn_timeout('{"name": "d", "run": {"turn_timeout": -5}}', "d") == 0.0
    assert turn_timeout('{"name": "e", "run"', "e") == 0.0
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 3 and all("stored sweep file is unreadable" in w for w in warned)
    assert warned[0].startswith("sweep c:") and "$.run.turn_timeout" in warned[0]
    assert warned[1].startswith("sweep d:") and ">= 0" in warned[1]
    assert warned[2].startswith("sweep e:")


async def test_a_corrupt_stored_sweep_file_still_lists_its_scenarios(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The scenario list of a sweep whose stored file is corrupt answers without deadlines and logs why."""
    async with await Store.open(tmp_path / "staminad.db") as store:
        await store.ensure_sweep("odd", "odd", "fp", '{"run": {"turn_timeout": [1]}}')
        config = await store.ensure_configuration("odd", "reference R=0 detailed", "reference", 0, "detailed")
        await store.ensure_scenario(config, 0)
        listed = await scenario_list(store, "odd")
    assert listed.turn_timeout == 0.0 and [s.seed for s in listed.scenarios] == [0]
    assert any(r.getMessage().startswith("sweep odd: its stored sweep file is unreadable") for r in caplog.records)


async def test_list_scenarios_and_retry_an_infra_failed_scenario(tmp_path: Path) -> None:
    """An infra_failed scenario is retried with a fresh infra budget and then passes; others refuse a retry."""
    path = write_sweep(tmp_path, "v", ["reference", "mutant:accept-null", "fault:self-kill:once"], turns=2)
    path.write_text(path.read_text().replace("infra_retries = 2", "infra_retries = 0"))
    state = tmp_path / "st"
    async with running_daemon(state), events(state, ("v",)) as stream:
        await submit(state, path)
        finished = await until(stream, "sweep_finished")
        listed = await request(state, ListScenarios(sweep="v"))
        assert isinstance(listed, ScenarioList)
        assert listed.seq >= finished.seq  # the rows say which events they already reflect
        rows = {r.configuration.split(" ")[0]: r for r in listed.scenarios}
        assert (rows["reference"].status, rows["reference"].history) == ("done", "PPP")
        assert rows["mutant:accept-null"].history.endswith("F")
        assert rows["mutant:accept-null"].last_failure
        fault = rows["fault:self-kill:once"]
        assert (fault.status, fault.history, fault.last_failure) == ("infra_failed", "I", "self_kill")
        assert set(listed.retries.values()) == {2}
        refused = await request(state, RetryScenario(sweep="v", configuration=rows["reference"].configuration, seed=0))
        assert isinstance(refused, ErrorReply) and "only one that used up its infra retries" in refused.message
        retried = await request(state, RetryScenario(sweep="v", configuration=fault.configuration, seed=0))
        assert isinstance(retried, Ok), retried
        await until(stream, "sweep_finished")
        again = await request(state, ListScenarios(sweep="v"))
        fault = next(r for r in again.scenarios if r.configuration == fault.configuration)
        assert (fault.status, fault.history, fault.turns_passed) == ("done", "PPP", 3)
    assert isinstance(await _unknown(state), ErrorReply)


async def _unknown(state: Path) -> object:
    async with running_daemon(state):
        return await request(state, ListScenarios(sweep="nope"))


async def test_subscribe_replays_recent_events_then_goes_live(tmp_path: Path) -> None:
    """replay=N first sends the last N matching events, oldest first, then live ones with no gap."""
    path = write_sweep(tmp_path, "r", ["reference"], turns=1)
    state = tmp_path / "st"
    async with running_daemon(state), events(state, ("r",)) as stream:
        await submit(state, path)
        await until(stream, "sweep_finished")
        async with events(state, ("r",), replay=3) as replayed:
            first = [await anext(replayed) for _ in range(3)]
            await submit(state, path)  # the finished sweep resumes: its events now arrive live
            with anyio.fail_after(60):
                live = await anext(replayed)
        assert [e.kind for e in first][-1] == "sweep_finished"
        assert [e.seq for e in first] == sorted(e.seq for e in first)
        assert live.seq == first[-1].seq + 1 and live.kind == "sweep_runtime"  # no gap, nothing replayed twice


@pytest.mark.parametrize(
    ("message", "refusal"),
    [
        (Subscribe(kinds=("attempt_tested", "no_such_kind")), "unknown event kind no_such_kind; known: "),
        (Subscribe(replay=-1), "replay -1 is negative"),
        (GetAttempt(attempt_id=2**63), f"no attempt {2**63}: attempt ids are 1..{2**63 - 1}"),
        (GetAttempt(attempt_id=-(2**63)), f"no attempt {-(2**63)}: attempt ids are 1.."),
        (GetCodeChange(attempt_id=0), "no attempt 0: attempt ids are 1.."),
        (GetScenario(sweep="w", configuration="c", seed=2**64 - 1), f"no scenario with seed {2**64 - 1}: seeds are"),
        (RetryScenario(sweep="w", configuration="c", seed=-1), "no scenario with seed -1: seeds are 0..1000000000"),
        (Submit(sweep_toml='name = "w"', base_dir="relative/dir"), "base_dir 'relative/dir' is relative; send"),
    ],
)
async def test_a_request_the_daemon_cannot_use_is_refused_as_the_requests_fault(
    tmp_path: Path, message: RequestFor[Message], refusal: str
) -> None:
    """A request the daemon cannot use is a usage error up front and leaves the connection usable."""
    state = tmp_path / "st"
    async with running_daemon(state), Client(state / "staminad.sock", name="test") as client:
        reply = await client.request(message)
        assert isinstance(reply, ErrorReply) and reply.usage and reply.message.startswith(refusal), reply
        assert "OverflowError" not in reply.message and "could not answer" not in reply.message
        pong = await client.request(Ping())
        assert isinstance(pong, Ok) and pong.detail == "pong"


async def test_an_error_reply_quoting_the_clients_text_stays_one_line(tmp_path: Path) -> None:
    """Newlines and escapes in a request's `source` or event kinds come back escaped, in one line."""
    state = tmp_path / "st"
    async with running_daemon(state), Client(state / "staminad.sock", name="test") as client:
        bad_toml = await client.request(Submit(sweep_toml="name = [", base_dir=str(tmp_path), source="a\nb\x1b[2Jc"))
        kinds = await client.request(Subscribe(kinds=("x\r\ny",)))
    assert isinstance(bad_toml, ErrorReply) and "a\\nb\\x1b[2Jc is not valid TOML" in bad_toml.message
    assert isinstance(kinds, ErrorReply) and "unknown event kind x\\r\\ny;" in kinds.message
    assert all(r.message.isprintable() for r in (bad_toml, kinds))


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["nosuch"], "staminad: error: no sweep nosuch"),
        (["--count", "-1"], "staminad logs: error: argument --count: -1 is outside 0..1000000000 (see --help)"),
        (["--replay", "-5"], "staminad logs: error: argument --replay: -5 is outside 0..1000000000 (see --help)"),
    ],
)
async def test_logs_refuses_an_unknown_sweep_and_negative_numbers_in_one_line(
    tmp_path: Path, args: list[str], line: str
) -> None:
    """`staminad logs nosuch` says so and exits 2 instead of waiting forever; negative counts are usage errors."""
    state = tmp_path / "st"
    async with running_daemon(state):
        with anyio.fail_after(60):
            done = await anyio.run_process(
                [sys.executable, "-m", "staminad.cli", "logs", *args, "--state-dir", str(state)], check=False
            )
    assert done.returncode == 2 and done.stderr.decode().splitlines() == [line]


async def test_retry_while_the_sweep_runs_starts_the_scenario_at_once(tmp_path: Path) -> None:
    """A retried scenario of a sweep that is still running (a manual agent holds it) starts without waiting."""
    path = write_sweep(tmp_path, "live", ["manual", "fault:self-kill:once"], turns=1)
    path.write_text(path.read_text().replace("infra_retries = 2", "infra_retries = 0"))
    state = tmp_path / "st"
    async with running_daemon(state), events(state, ("live",)) as stream:
        await submit(state, path)
        gave_up = await until(stream, "scenario_finished")
        assert isinstance(gave_up.data, ScenarioFinished) and gave_up.data.status == "infra_failed"
        config = next(
            r.configuration
            for r in (await request(state, ListScenarios(sweep="live"))).scenarios
            if r.configuration.startswith("fault")
        )
        assert isinstance(await request(state, RetryScenario(sweep="live", configuration=config, seed=0)), Ok)
        passed = await until(stream, "scenario_finished")
        assert isinstance(passed.data, ScenarioFinished)
        assert (passed.data.status, passed.data.turns_passed) == ("done", 2)
        listed = await request(state, ListScenarios(sweep="live"))
        assert {r.phase for r in listed.scenarios} == {"done", "agent working"}
        assert isinstance(await request(state, Cancel(sweep="live")), Ok)


async def test_a_failed_sweeps_reason_is_stored_and_shown_until_it_runs_again(tmp_path: Path) -> None:
    """The reason stored with `error` comes back in the sweep's info; any later status clears it."""
    from staminad.daemon.views import sweep_info
    from state.store import Store

    async with await Store.open(tmp_path / "staminad.db") as store:
        await store.ensure_sweep("w", "w", "f", "{}")
        await store.set_sweep_status("w", "error", reason="SweepError: the pack is gone")
        assert (await sweep_info(store, "w")).reason == "SweepError: the pack is gone"
        await store.set_sweep_status("w", "running")
        assert (await sweep_info(store, "w")).reason == ""


async def test_scenarios_held_at_a_pause_are_not_counted_as_running(tmp_path: Path) -> None:
    """A paused sweep's scenarios that took a slot but wait at the gate count as neither running nor queued."""
    from anyio import wait_all_tasks_blocked

    from protocol import SweepInfo
    from staminad.daemon.running import Running
    from staminad.daemon.service import Daemon
    from staminad.engine.gate import Gate

    daemon = Daemon(tmp_path / "st", max_parallel=8)
    gate = Gate()
    gate.pause()
    daemon.running["w"] = Running("w", gate)
    daemon.limiter.caps["w"] = 2
    info = SweepInfo(sweep="w", status="paused", fingerprint="f")

    async def held() -> None:
        async with daemon.limiter.slot("w"):
            await gate.wait()

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(held)
        await wait_all_tasks_blocked()
        shown = daemon.with_slots(info)
        assert (gate.held, daemon.limiter.held["w"]) == (2, 2)
        assert (shown.parallel, shown.active, shown.queued) == (2, 0, 1)
        gate.resume()
    assert gate.held == 0 and daemon.with_slots(info).active == 0
    daemon.running.pop("w").close()


async def test_status_says_where_a_manual_scenarios_prompt_is(tmp_path: Path) -> None:
    """After a submit, `status` names the prompt handed to a person, its workspace and the done command."""
    state = tmp_path / "st"
    held = write_sweep(tmp_path, "held", ["manual"], turns=1)
    async with running_daemon(state), events(state, ("held",)) as stream:
        await submit(state, held)
        handed = (await until(stream, "manual_prompt")).data
        assert isinstance(handed, ManualPrompt)
        info = await request(state, GetSweep(sweep="held"))
        assert isinstance(info, SweepInfo) and len(info.waiting) == 1
        w = info.waiting[0]
        assert (w.prompt, w.workspace, w.done) == (handed.prompt, handed.workspace, handed.done)
        assert any(
            line.endswith(f"your turn. Prompt: {w.prompt}; work in {w.workspace}; then run: {w.done}")
            for line in info_lines(info)
        )
        assert isinstance(await request(state, Cancel(sweep="held")), Ok)
