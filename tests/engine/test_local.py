"""The engine on the local runtime: Algorithm 1, fault injectors and their classification, manual play."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from protocol.events import AttemptTested, EventData, ManualPrompt
from staminad.sandbox.local import local_factory
from staminad.sandbox.ports import PortAllocator
from state.store import Store
from tests.engine.conftest import Recorder, sweep, write_sweep

pytestmark = pytest.mark.anyio


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
    assert last_turn[1].prompt_kind == "feedback" and "wrong_response_format" in (last_turn[0].categories or "")
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
        path.write_text(path.read_text().replace("turn_timeout = 20", "turn_timeout = 3"))
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
    """`manual`: the engine announces the prompt and waits; a person answers and runs `staminad done`."""
    path = write_sweep(tmp_path, "human", ["manual"], turns=1, retries=0)
    rec = Recorder()
    agent = Path(__file__).parents[2] / "staminad" / "reference" / "agent.py"
    answered: list[str] = []

    def play(data: EventData) -> None:
        if not isinstance(data, ManualPrompt):
            return
        ws, prompt, marker = data.workspace, data.prompt, data.done.split()[-1]
        subprocess.run([sys.executable, str(agent), "--workspace", ws, "--prompt-file", prompt], check=True)
        subprocess.run(
            [sys.executable, "-m", "staminad.cli", "done", "--marker", marker], check=True, env={**os.environ}
        )
        answered.append(prompt)

    rec.hooks.append(play)
    res = await sweep(path, tmp_path / "state", recorder=rec)
    assert res["manual R=0 detailed"].statuses == {"done": 1}
    assert len(answered) == 2


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

    def key(s: dict[str, object]) -> list[tuple[object, ...]]:
        return [(v.mean_turns, v.statuses) for v in s.values()]  # type: ignore[attr-defined]

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
    orphan = subprocess.Popen(["sleep", "300"], env={**os.environ, SERVER_TAG: str(box.root)}, start_new_session=True)
    bystander = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        await box.prepare()
        assert orphan.wait(timeout=10) == -9
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


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

    import staminad.engine.scenario as engine

    threads: dict[str, set[int]] = {"suite": set(), "texts": set()}
    real_suite, real_prompt = engine.generate_suite, engine.change_prompt

    def suite_spy(*args: object) -> object:
        threads["suite"].add(threading.get_ident())
        return real_suite(*args)  # type: ignore[arg-type]

    def prompt_spy(*args: object) -> object:
        threads["texts"].add(threading.get_ident())
        return real_prompt(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "generate_suite", suite_spy)
    monkeypatch.setattr(engine, "change_prompt", prompt_spy)
    path = write_sweep(tmp_path, "offloop", ["reference"], turns=2)
    res = await sweep(path, tmp_path / "state")
    assert res["reference R=2 detailed"].mean_turns == 3
    assert threads["suite"] and threads["texts"]
    assert threading.get_ident() not in threads["suite"] | threads["texts"]


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
