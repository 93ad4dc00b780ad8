"""The engine on the local runtime: Algorithm 1, fault injectors and their classification, manual play."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from protocol.events import AttemptTested, EventData, InfraFailure, ManualPrompt
from protocol.messages import ConfigStatus
from staminad.agents.base import adapter_for
from staminad.engine.markers import MarkerWatcher
from staminad.engine.scenario import ScenarioRunner
from staminad.engine.spec import EngineSettings
from staminad.sandbox.hostfiles import HostFiles
from staminad.sandbox.local import local_factory
from staminad.sandbox.ports import PortAllocator
from state.store import AttemptRow, Store
from tests.helpers.sweeps import Recorder, sweep, write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]

AGENT = Path(__file__).parents[2] / "staminad" / "reference" / "agent.py"


async def test_reference_passes_every_turn_and_mutants_fail_with_their_category(tmp_path: Path) -> None:
    """Reference: all N+1 turns. A mutant stops at its first failure (R retries used), scored as an agent failure."""
    path = write_sweep(tmp_path, "alg1", ["reference", "mutant:swap-400-409"], seeds="0-1", turns=4, retries=1)
    res = await sweep(path, tmp_path / "state")
    ref, mut = res["reference R=1 detailed"], res["mutant:swap-400-409 R=1 detailed"]
    assert ref.mean_turns == 5 and ref.pass_rate == 1.0 and ref.statuses == {"done": 2}
    assert mut.statuses == {"failed": 2} and mut.mean_turns < 5 and not mut.infra
    async with await Store.open(tmp_path / "state" / "staminad.db") as store:
        rows = await store.scenarios("alg1")
        failed = next(r for name, r in rows if name.startswith("mutant"))
        attempts = await store.attempts(failed.id)
    last_turn = [a for a in attempts if a.turn == attempts[-1].turn]
    assert [a.attempt for a in last_turn] == [1, 2]  # R=1: one retry with feedback
    assert last_turn[1].prompt_kind == "feedback" and "wrong_response_format" in last_turn[0].categories
    assert last_turn[1].prompt == last_turn[0].feedback


async def test_retry_with_feedback_recovers_a_self_repairing_mutant(tmp_path: Path) -> None:
    """A mutant that repairs itself after feedback passes on its second attempt and goes on."""
    path = write_sweep(tmp_path, "fix", ["mutant:exclusive-bounds+fix"], turns=2, retries=1)
    res = await sweep(path, tmp_path / "state")
    assert res["mutant:exclusive-bounds+fix R=1 detailed"].statuses == {"done": 1}


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ("self-kill", "self_kill"),
        ("hang", "stuck"),
        ("crash", "harness_crash"),
    ],
)
async def test_transient_faults_are_classified_and_recovered_without_using_r(
    tmp_path: Path, fault: str, kind: str
) -> None:
    """Each fault really happens, is classified as its infra kind, and one infra retry recovers even with R=0."""
    path = write_sweep(tmp_path, f"once-{fault}", [f"fault:{fault}:once"], turns=1, retries=0)
    if fault == "hang":
        # Waited out once; the retry (a fresh interpreter and the reference agent) must fit it on a busy box.
        path.write_text(path.read_text().replace("turn_timeout = 20", "turn_timeout = 6"))
    res = await sweep(path, tmp_path / "state")
    s = res[f"fault:{fault}:once R=0 detailed"]
    assert s.statuses == {"done": 1} and s.mean_turns == 2
    assert s.infra == {kind: 1}


async def test_permanent_fault_ends_the_scenario_as_infra_not_agent_failure(tmp_path: Path) -> None:
    """A harness that always crashes uses its infra retries and ends infra_failed (scored as such, not failed)."""
    path = write_sweep(tmp_path, "crash", ["fault:crash"], turns=1, retries=2)
    res = await sweep(path, tmp_path / "state")
    s = res["fault:crash R=2 detailed"]
    assert s.statuses == {"infra_failed": 1} and s.infra == {"harness_crash": 3}


async def test_manual_agent_waits_for_staminad_done(tmp_path: Path) -> None:
    """`manual` waits for `staminad done`; harness time runs from the prompt's delivery to `done`."""
    path = write_sweep(tmp_path, "human", ["manual"], turns=1, retries=0)
    rec = Recorder()
    agent = Path(__file__).parents[2] / "staminad" / "reference" / "agent.py"
    answered: list[str] = []
    before_done: list[float] = []

    def play(data: EventData) -> None:
        if not isinstance(data, ManualPrompt):
            return
        ws, prompt, marker = data.workspace, data.prompt, data.done.split()[-1]
        subprocess.run([sys.executable, str(agent), "--workspace", ws, "--prompt-file", prompt], check=True)
        before_done.append(time.time())
        subprocess.run(
            [sys.executable, "-m", "staminad.cli", "done", "--marker", marker], check=True, env={**os.environ}
        )
        answered.append(prompt)

    rec.hooks.append(play)
    res = await sweep(path, tmp_path / "state", recorder=rec)
    assert res["manual R=0 detailed"].statuses == {"done": 1}
    assert len(answered) == 2
    async with await Store.open(tmp_path / "state" / "staminad.db") as store:
        ((_, row),) = await store.scenarios("human")
        attempts = await store.attempts(row.id)
    for a, done_after in zip(attempts, before_done, strict=True):
        assert a.harness_seconds is not None and a.harness_seconds >= done_after - a.launched_at > 0


async def test_interrupted_sweep_resumes_to_the_same_results(tmp_path: Path) -> None:
    """Cancelling a sweep mid-way and running it again gives the results of an uninterrupted run."""
    agents = ["reference", "mutant:no-cascade", "mutant:rounded-avg+fix"]
    whole = await sweep(write_sweep(tmp_path, "whole", agents, seeds="0-1", turns=5), tmp_path / "a")
    path = write_sweep(tmp_path, "cut", agents, seeds="0-1", turns=5)
    rec = Recorder()
    with anyio.move_on_after(60) as scope:

        def stop_after_some(data: EventData) -> None:
            if isinstance(data, AttemptTested) and len(rec.kinds(AttemptTested)) == 7:
                scope.cancel()

        rec.hooks.append(stop_after_some)
        await sweep(path, tmp_path / "b", recorder=rec)
    assert scope.cancelled_caught
    resumed = await sweep(path, tmp_path / "b")

    def key(s: dict[str, ConfigStatus]) -> list[tuple[object, ...]]:
        return [(v.mean_turns, v.statuses) for v in s.values()]

    assert key(resumed) == key(whole)


async def test_ports_are_released_after_a_sweep(tmp_path: Path) -> None:
    """Every port handed out for a server is returned, and nothing listens on it afterwards."""
    ports = PortAllocator(31000, 31050)
    path = write_sweep(tmp_path, "ports", ["reference", "mutant:accept-null"], seeds="0-2", turns=2)
    await sweep(path, tmp_path / "state", factory=local_factory(ports))
    assert ports.held == set()


async def test_prepare_kills_a_server_left_by_a_killed_daemon(tmp_path: Path) -> None:
    """A server started for a sandbox and orphaned (its daemon died before recording it) dies on prepare."""
    from staminad.sandbox.local import SERVER_TAG, LocalSandbox

    box = LocalSandbox(tmp_path / "box", PortAllocator(31100, 31110))
    await box.prepare()
    # Popen returns once exec has begun, before the kernel publishes the new environment in /proc; a child
    # that says so itself is past that point (a killed daemon's orphans are long past it).
    running = "import time; print('up', flush=True); time.sleep(300)"
    orphan = subprocess.Popen(
        [sys.executable, "-c", running],
        env={**os.environ, SERVER_TAG: str(box.root)},
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    # The bystander only mentions the tag inside another variable's value.
    bystander = subprocess.Popen(
        [sys.executable, "-c", running],
        env={**os.environ, "NOTE": f"{SERVER_TAG}={box.root}"},
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert orphan.stdout is not None and bystander.stdout is not None
        assert orphan.stdout.readline() == bystander.stdout.readline() == b"up\n"
        await box.prepare()
        assert orphan.wait(timeout=10) == -9
        assert bystander.poll() is None
    finally:
        for child in (orphan, bystander):
            child.kill()
            child.wait()
            assert child.stdout is not None
            child.stdout.close()


async def test_a_port_answered_by_a_program_outside_the_sandbox_is_not_tested(tmp_path: Path) -> None:
    """If something else answers on the server's port, start_server fails as a platform fault, not scored."""
    from staminad.sandbox.base import SandboxError
    from staminad.sandbox.local import SERVER_TAG, LocalSandbox

    box = LocalSandbox(tmp_path / "box", PortAllocator(31120, 31120, lock_dir=tmp_path / "locks"))
    await box.prepare()
    # The foreign server leaves the sandbox's session and environment, as another program on the box would.
    (box.host_workspace / "run_server.sh").write_text(
        f'env -u {SERVER_TAG} setsid python3 -m http.server --bind 127.0.0.1 "$1" >/dev/null 2>&1 &\n'
        "echo $! > foreign.pid\nexec sleep 300\n"
    )
    try:
        with pytest.raises(SandboxError, match="answered by a program outside this sandbox") as info:
            await box.start_server(timeout=20)
        assert info.value.kind == "port_taken"
    finally:
        os.kill(int((box.host_workspace / "foreign.pid").read_text()), 9)
    assert box.ports.held == set()


async def test_suites_and_turn_texts_are_generated_off_the_event_loop_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Suite generation (which grows with the design) and the turn texts never run on the loop every scenario shares."""
    import threading

    import staminad.engine.suites as suites
    import staminad.engine.turns as turns

    threads: dict[str, set[int]] = {"suite": set(), "texts": set()}
    from staminad.bench.texts import change_prompt as real_prompt
    from staminad.suite.generate import generate_suite as real_suite

    def suite_spy(*args: object) -> object:
        threads["suite"].add(threading.get_ident())
        return real_suite(*args)  # type: ignore[arg-type]

    def prompt_spy(*args: object) -> object:
        threads["texts"].add(threading.get_ident())
        return real_prompt(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(suites, "generate_suite", suite_spy)  # the in-thread path (no worker pool in process)
    monkeypatch.setattr(turns, "change_prompt", prompt_spy)
    path = write_sweep(tmp_path, "offloop", ["reference"], turns=2)
    res = await sweep(path, tmp_path / "state")
    assert res["reference R=2 detailed"].mean_turns == 3
    assert threads["suite"] and threads["texts"]
    assert threading.get_ident() not in threads["suite"] | threads["texts"]


def _answer(workspace: str, prompt: str, marker: str) -> None:
    """What a person does with a manual prompt: the reference agent's answer, then `staminad done`."""
    subprocess.run([sys.executable, str(AGENT), "--workspace", workspace, "--prompt-file", prompt], check=True)
    subprocess.run([sys.executable, "-m", "staminad.cli", "done", "--marker", marker], check=True, env={**os.environ})


def _answering(rec: Recorder, skip: int = 0) -> list[str]:
    """Answer every manual prompt after the first `skip`; returns the prompts answered."""
    answered: list[str] = []
    seen: list[str] = []

    def play(data: EventData) -> None:
        if isinstance(data, ManualPrompt):
            seen.append(data.prompt)
            if len(seen) > skip:
                _answer(data.workspace, data.prompt, data.done.split()[-1])
                answered.append(data.prompt)

    rec.hooks.append(play)
    return answered


async def _stopped_at_the_first_prompt(path: Path, state: Path) -> ManualPrompt:
    """Run the sweep until its first manual prompt, then stop it as SIGTERM would (the attempt stays launched)."""
    rec = Recorder()
    with anyio.move_on_after(60) as scope:
        rec.hooks.append(lambda data: scope.cancel() if isinstance(data, ManualPrompt) else None)
        await sweep(path, state, recorder=rec)
    assert scope.cancelled_caught
    return rec.kinds(ManualPrompt)[0]


def _downtime(state: Path, seconds: float) -> None:
    """As if the engine had been stopped `seconds` ago, right after launching: the attempt's launch moves back."""
    with sqlite3.connect(state / "staminad.db") as conn:
        conn.execute("UPDATE attempts SET launched_at = launched_at - ?", (seconds,))


@pytest.mark.parametrize(
    ("forged", "says"),
    [
        ({"exit": 99999999999999999999999, "signal": None}, "exit 99999999999999999999999"),
        ({"exit": 0, "signal": 99999999999999999999999}, "signal 99999999999999999999999"),
        ({"exit": 0, "signal": None, "started": float("inf"), "ended": float("-inf")}, "started Infinity"),
    ],
)
async def test_a_forged_marker_with_an_unusable_field_is_a_harness_crash_of_that_attempt(
    tmp_path: Path, forged: dict[str, object], says: str
) -> None:
    """A marker an agent forged out of range is that attempt's `harness_crash` (retried), never an engine error."""
    path = write_sweep(tmp_path, "forged", ["manual"], turns=0, retries=0)
    rec = Recorder()
    answered = _answering(rec, skip=1)

    def forge(data: EventData) -> None:
        if isinstance(data, ManualPrompt) and not answered and len(rec.kinds(ManualPrompt)) == 1:
            marker = Path(data.done.split()[-1])
            marker.with_suffix(".tmp").write_text(json.dumps(forged))
            marker.with_suffix(".tmp").replace(marker)

    rec.hooks.insert(0, forge)
    res = await sweep(path, tmp_path / "state", recorder=rec)
    assert res["manual R=0 detailed"].statuses == {"done": 1} and res["manual R=0 detailed"].infra == {
        "harness_crash": 1
    }
    crash = next(d for d in rec.kinds(InfraFailure))
    assert says in crash.detail and "unusable marker" in crash.detail
    with sqlite3.connect(tmp_path / "state" / "staminad.db") as conn:
        first = conn.execute(
            "SELECT harness_exit, harness_signal, harness_seconds, marker_latency FROM attempts ORDER BY id"
        ).fetchone()
    assert first == (None, None, None, None)


async def test_a_manual_attempt_finished_while_the_engine_was_stopped_is_read_on_resume(tmp_path: Path) -> None:
    """`done` run while `run` was down, past the turn timeout in wall time: the resumed run tests that answer."""
    path = write_sweep(tmp_path, "finished-away", ["manual"], turns=1, retries=0)
    state = tmp_path / "state"
    first = await _stopped_at_the_first_prompt(path, state)
    _answer(first.workspace, first.prompt, first.done.split()[-1])
    _downtime(state, 1000.0)  # the turn timeout is 20 s
    rec = Recorder()
    _answering(rec)
    res = await sweep(path, state, recorder=rec)
    assert res["manual R=0 detailed"].statuses == {"done": 1} and res["manual R=0 detailed"].infra == {}
    assert rec.kinds(ManualPrompt)[0].prompt != first.prompt  # the finished one is not asked again
    async with await Store.open(state / "staminad.db") as store:
        scenario = (await store.scenarios("finished-away"))[0][1]
        rows = await store.attempts(scenario.id)
    assert [(r.turn, r.outcome) for r in rows] == [(0, "pass"), (1, "pass")]
    assert rows[0].resumed_at is not None and rows[1].resumed_at is None


async def test_the_time_the_engine_was_stopped_does_not_count_against_the_turn_timeout(tmp_path: Path) -> None:
    """A resumed attempt still running is watched from the resume (and its prompt shown again), not judged stuck."""
    path = write_sweep(tmp_path, "away", ["manual"], turns=0, retries=0)
    state = tmp_path / "state"
    first = await _stopped_at_the_first_prompt(path, state)
    _downtime(state, 1000.0)
    rec = Recorder()
    answered = _answering(rec)
    res = await sweep(path, state, recorder=rec)
    assert res["manual R=0 detailed"].statuses == {"done": 1} and res["manual R=0 detailed"].infra == {}
    assert answered == [first.prompt]


class _Files(HostFiles):
    """Marker files under `control`, in a sandbox that is always healthy: the watchdog alone, on real files."""

    def __init__(self, control: Path) -> None:
        self.host_control = control

    async def health(self, since: float) -> None:
        return None


def _watchdog(control: Path, launched_ago: float) -> tuple[ScenarioRunner, MarkerWatcher, AttemptRow]:
    """A runner over `_Files(control)` (turn timeout 20 s), its watcher, and a row launched `launched_ago` s ago."""
    (control / "markers").mkdir(parents=True)
    watcher = MarkerWatcher()
    runner = ScenarioRunner(
        cast(Any, None),
        cast(Any, None),
        cast(Any, _Files(control)),
        adapter_for("manual"),
        watcher,
        EngineSettings(turn_timeout=20.0),
        lambda data: None,
    )
    row = AttemptRow(
        id=1, scenario_id=1, turn=0, attempt=1, infra_try=0, phase="launched", prompt_kind="initial", prompt="p",
        launched_at=time.time() - launched_ago,
    )  # fmt: skip
    return runner, watcher, row


async def test_a_marker_present_at_the_deadline_is_read_not_judged_stuck(tmp_path: Path) -> None:
    """The watchdog looks for the marker once more when the turn timeout has passed, before calling it stuck."""
    control = tmp_path / "control"
    runner, watcher, row = _watchdog(control, 1000.0)
    (control / "markers" / "t0000-a01-i00.json").write_text('{"exit": 0, "signal": null}')
    try:
        marker, lost = await runner._wait_marker(row, "t0000-a01-i00")
    finally:
        watcher.close()
    assert marker is not None and marker["exit"] == 0 and lost is None


def test_run_with_a_relative_state_dir_passes_its_turns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`run --state-dir rel` is made absolute on entry: the harness, run in its workspace, still finds its prompt."""
    from staminad.cli import main

    write_sweep(tmp_path, "rel", ["reference"], turns=1, retries=0)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--quiet", "--state-dir", "relstate", "rel.toml"]) == 0

    async def stored() -> list[tuple[str, int]]:
        async with await Store.open(tmp_path / "relstate" / "staminad.db") as store:
            return [(s.status, s.turns_passed) for _, s in await store.scenarios("rel")]

    assert anyio.run(stored) == [("done", 2)]


async def test_the_time_a_sandbox_takes_to_be_made_does_not_count_against_the_turn_timeout(tmp_path: Path) -> None:
    """A sandbox made (or remade after a loss) for this attempt starts its watchdog at ready, not at launch."""
    control = tmp_path / "control"
    runner, watcher, row = _watchdog(control, 25.0)
    runner._ready_at = time.time()  # the sandbox took 25 s to make: longer than the whole turn timeout
    found: list[tuple[Any, Any]] = []
    done = anyio.Event()

    async def wait() -> None:
        found.append(await runner._wait_marker(row, "t0000-a01-i00"))
        done.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watcher.serve)
            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()  # the watchdog waits for the marker (it has not judged it stuck)
            assert not found
            (control / "markers" / "t0000-a01-i00.json").write_text('{"exit": 0, "signal": null}')
            with anyio.fail_after(30):  # bounded: the marker's inotify event arrives
                await done.wait()
            tg.cancel_scope.cancel()
    finally:
        watcher.close()
    ((marker, lost),) = found
    assert marker is not None and marker["exit"] == 0 and lost is None
