"""A sweep spread over two real Docker engines (the local one and a second dockerd on 127.0.0.1).

Same results as a local run, no bind mount on either engine, an engine stopped mid-sweep moving its
scenarios to the other as `sandbox_lost` infra retries (R untouched), and kill -9 of `staminad run`
resuming every scenario on the engine it was on.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiodocker
import anyio
import pytest

from protocol.events import AttemptStarted, AttemptTested, EventData, InfraFailure
from staminad.engine.config import load_sweep
from staminad.sandbox.docker.bindsandbox import LABEL_SANDBOXES
from staminad.sandbox.docker.engineconnect import local_socket
from staminad.sandbox.docker.enginepool import PLACEMENT, EnginePool
from tests.helpers.dockerd import SecondEngine
from tests.helpers.sweeps import Recorder, sweep, write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.docker, pytest.mark.sweep]
LOCAL = local_socket()


def two_engines(
    tmp: Path,
    name: str,
    engine: SecondEngine,
    image: str,
    seeds: str,
    turns: int,
    in_file: bool = True,
    slots: tuple[int, int] = (2, 2),
) -> Path:
    """A reference sweep over the local engine and the second one, `slots` each (`in_file`: named in its
    `[run] engines`, else left to `--engine`)."""
    extra = f'image = "{image}"\n'
    if in_file:
        pair = f'{{ url = "{LOCAL}", slots = {slots[0]} }}, {{ url = "{engine.url}", slots = {slots[1]} }}'
        extra += f"engines = [{pair}]\n"
    return write_sweep(tmp, name, ["reference"], seeds=seeds, turns=turns, runtime="docker", extra=extra, patient=True)


def placements(state: Path, name: str) -> dict[str, str]:
    """Scenario directory -> the engine its sandbox was last placed on."""
    out = {}
    for root in sorted((state / "sandboxes" / name).iterdir()):
        if (root / PLACEMENT).exists():
            out[root.name] = json.loads((root / PLACEMENT).read_text())["url"]
    return out


def stored_engines(state: Path) -> dict[int, str]:
    """Scenario id -> the engine its stored sandbox row names."""
    db = sqlite3.connect(state / "staminad.db")
    try:
        return {i: json.loads(s)["engine"] for i, s in db.execute("SELECT id, sandbox FROM scenarios")}
    finally:
        db.close()


def attempts(state: Path) -> list[tuple[int, int, int, int, str, str | None]]:
    """(scenario, turn, attempt, infra try, outcome, infra kind) of every attempt, in order."""
    db = sqlite3.connect(state / "staminad.db")
    try:
        return list(
            db.execute(
                "SELECT scenario_id, turn, attempt, infra_try, outcome, infra_kind FROM attempts "
                "ORDER BY scenario_id, id"
            )
        )
    finally:
        db.close()


async def containers(url: str, sandboxes: Path) -> list[dict[str, Any]]:
    """The inspected containers of one sweep's sandbox directory on an engine (one removed between the listing and
    its inspection, as a scenario that just finished removes its own, is left out)."""
    async with aiodocker.Docker(url=url.replace("tcp://", "http://")) as client:
        found = await client.containers.list(all=True, filters={"label": [f"{LABEL_SANDBOXES}={sandboxes}"]})
        shown = []
        for container in found:
            try:
                shown.append(await container.show())
            except aiodocker.exceptions.DockerError as exc:
                if exc.status != 404:
                    raise
        return shown


async def test_a_sweep_over_two_engines_gives_the_local_results_with_no_bind_mount(
    tmp_path: Path, second_engine: SecondEngine, sandbox_image: str
) -> None:
    """A sweep over two engines gives the local results on volumes only, leaving no container behind."""
    path = two_engines(tmp_path, "two", second_engine, sandbox_image, "0-3", 2)
    local = await sweep(write_sweep(tmp_path, "loc", ["reference"], seeds="0-3", turns=2), tmp_path / "l")
    sw, _ = load_sweep(path)
    state, sandboxes = tmp_path / "s", (tmp_path / "s" / "sandboxes" / "two").resolve()
    seen: dict[str, dict[str, Any]] = {}
    tested, received = anyio.create_memory_object_stream[None](100)
    recorder = Recorder()

    def on_tested(event: EventData) -> None:
        if isinstance(event, AttemptTested):
            tested.send_nowait(None)

    recorder.hooks.append(on_tested)

    async def look() -> None:  # at each tested attempt, what both engines hold of the sweep
        async for _ in received:
            for url in (LOCAL, second_engine.url):
                for info in await containers(url, sandboxes):
                    seen[f"{url} {info['Name']}"] = info

    async with anyio.create_task_group() as tg:
        tg.start_soon(look)
        two = await sweep(path, state, factory=EnginePool(sw.run, sw.run.engines), recorder=recorder)
        tested.close()
    assert [(s.mean_turns, s.statuses, s.infra) for s in two.values()] == [
        (s.mean_turns, s.statuses, s.infra) for s in local.values()
    ]
    assert sorted(placements(state, "two").values()) == sorted([LOCAL, LOCAL, second_engine.url, second_engine.url])
    assert sorted(stored_engines(state).values()) == sorted(placements(state, "two").values())
    assert {k.split(" ")[0] for k in seen} == {LOCAL, second_engine.url}
    assert all(m["Type"] == "volume" for info in seen.values() for m in info["Mounts"]), seen
    assert all(not info["HostConfig"].get("Binds") for info in seen.values())
    assert await containers(LOCAL, sandboxes) == [] and await containers(second_engine.url, sandboxes) == []


@pytest.mark.parametrize("how", ["freeze", "stop"])
async def test_an_engine_lost_mid_sweep_moves_its_scenarios_without_touching_r(
    tmp_path: Path, second_engine: SecondEngine, sandbox_image: str, how: str
) -> None:
    """An engine frozen or stopped mid-harness is one `sandbox_lost` retry, passing locally; results unchanged."""
    # Frozen (SIGSTOP) its containers run on; stopped (SIGTERM) it stops them and goes. The one scenario there is
    # lost in its harness, so its last snapshot is current: one lost while tested would rightly wait for its engine.
    path = two_engines(tmp_path, "stop", second_engine, sandbox_image, "0-3", 3, slots=(3, 1))
    local = await sweep(write_sweep(tmp_path, "loc", ["reference"], seeds="0-3", turns=3), tmp_path / "l")
    sw, _ = load_sweep(path)
    state = tmp_path / "s"
    stop_now = anyio.Event()
    moved: set[int] = set()

    def hook(data: EventData) -> None:  # at turn 1's start the snapshot of turn 0 is taken
        if isinstance(data, AttemptStarted) and data.turn == 1:
            root = state / "sandboxes" / "stop" / f"c1-s{data.seed}"
            if json.loads((root / PLACEMENT).read_text())["url"] == second_engine.url and not moved:
                moved.add(data.scenario)
                stop_now.set()
                if how == "freeze":
                    second_engine.freeze()
                else:
                    # Stopped right here, the event loop held meanwhile (about a second), so the daemon sees
                    # nothing of the turn on that engine before it is gone: the loss falls in the harness.
                    second_engine.stop()

    recorder = Recorder()
    recorder.hooks.append(hook)

    try:
        res = await sweep(path, state, factory=EnginePool(sw.run, sw.run.engines), recorder=recorder)
    finally:
        if stop_now.is_set():  # thawed and stopped (it stops what it held) if need be, back for the other tests
            await anyio.to_thread.run_sync(second_engine.stop)
            await anyio.to_thread.run_sync(second_engine.start)
    assert stop_now.is_set() and len(moved) == 1
    ((name, s),) = res.items()
    infra = [(d.seed, d.turn, d.infra_try, d.infra_kind, d.detail) for d in recorder.kinds(InfraFailure)]
    assert (s.mean_turns, s.statuses) == (local[name].mean_turns, local[name].statuses), infra
    assert s.infra == {"sandbox_lost": 1}, infra
    rows = attempts(state)
    for scenario in moved:
        mine = [r for r in rows if r[0] == scenario]
        lost = [r for r in mine if r[4] == "infra"]
        assert len(lost) == 1 and lost[0][5] == "sandbox_lost"
        _, turn, attempt, infra_try, _, _ = lost[0]
        retry = [r for r in mine if r[1:3] == (turn, attempt) and r[3] == infra_try + 1]
        assert [r[4] for r in retry] == ["pass"]  # R untouched: the same attempt, passed at once
        assert all(r[2] == 1 for r in mine)  # no feedback retry anywhere
    assert set(placements(state, "stop").values()) == {LOCAL}
    assert set(stored_engines(state).values()) == {LOCAL}
    async with aiodocker.Docker(url=second_engine.url.replace("tcp://", "http://")) as client:
        sandboxes = (state / "sandboxes" / "stop").resolve()
        for c in await client.containers.list(all=True, filters={"label": [f"{LABEL_SANDBOXES}={sandboxes}"]}):
            await c.delete(force=True)  # what the stopped engine still held when it came back


def test_kill_minus_9_of_staminad_run_resumes_each_scenario_on_its_engine(
    tmp_path: Path, second_engine: SecondEngine, sandbox_image: str
) -> None:
    """`staminad run` over two engines, killed -9 and rerun, finishes each scenario on its own engine."""
    path = two_engines(tmp_path, "k9", second_engine, sandbox_image, "0-3", 3, in_file=False)
    local = anyio.run(sweep, write_sweep(tmp_path, "loc", ["reference"], seeds="0-3", turns=3), tmp_path / "l")
    state = tmp_path / "s"
    argv = [sys.executable, "-m", "staminad.cli", "run", str(path), "--state-dir", str(state)]
    argv += ["--engine", f"{LOCAL},slots=2", "--engine", f"{second_engine.url},slots=2"]
    log = tmp_path / "run.log"
    with log.open("wb") as out:  # a file: a pipe nobody reads would fill and block the run
        proc = subprocess.Popen([*argv, "--quiet"], start_new_session=True, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            into_turn1 = _into_turn1(state)
            if len(set(into_turn1.values())) == 2:
                break
            time.sleep(0.1)  # polling another process's progress in its store
        assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
        before = placements(state, "k9")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    again = subprocess.run([*argv, "--quiet"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert placements(state, "k9") == before and len(set(before.values())) == 2
    rows = attempts(state)
    tested = [r[:3] for r in rows if r[4] in ("pass", "fail")]
    assert len(tested) == len(set(tested)) and not [r for r in rows if r[4] == "infra"]
    (expected,) = local.values()
    db = sqlite3.connect(state / "staminad.db")
    try:
        ends = db.execute("SELECT status, turns_passed FROM scenarios").fetchall()
    finally:
        db.close()
    assert sorted(ends) == [("done", int(expected.mean_turns))] * 4 and expected.statuses == {"done": 4}
    left = anyio.run(containers, second_engine.url, (state / "sandboxes" / "k9").resolve())
    assert left == [] and anyio.run(containers, LOCAL, (state / "sandboxes" / "k9").resolve()) == []


def _into_turn1(state: Path) -> dict[int, str]:
    """Scenarios with an attempt at turn 1 or later -> the engine they are on (empty until the store exists)."""
    try:
        db = sqlite3.connect(f"file:{state / 'staminad.db'}?mode=ro", uri=True, timeout=1)
        try:
            rows = db.execute("SELECT DISTINCT scenario_id FROM attempts WHERE turn >= 1").fetchall()
            engines = dict(db.execute("SELECT id, sandbox FROM scenarios"))
        finally:
            db.close()
    except sqlite3.Error:
        return {}
    return {i: json.loads(engines[i] or "{}").get("engine", "") for (i,) in rows if engines.get(i)}


def test_staminad_status_shows_each_engine_of_a_running_sweep(
    tmp_path: Path, second_engine: SecondEngine, sandbox_image: str
) -> None:
    """`status` of a two-engine sweep names both engines with their scenarios and slots, and each row's engine."""
    path = two_engines(tmp_path, "st", second_engine, sandbox_image, "0-3", 3, in_file=False)
    state = tmp_path / "s"
    cli = [sys.executable, "-m", "staminad.cli"]
    engines = ["--engine", f"{LOCAL},slots=2", "--engine", f"{second_engine.url},slots=2"]
    log = tmp_path / "daemon.log"
    with log.open("wb") as out:
        daemon = subprocess.Popen(
            [*cli, "start", "--state-dir", str(state), *engines], stdout=out, stderr=out, start_new_session=True
        )

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*cli, *args, "--state-dir", str(state)], capture_output=True, text=True, timeout=60)

    try:
        deadline = time.monotonic() + 60
        while not (state / "staminad.sock").exists() and time.monotonic() < deadline and daemon.poll() is None:
            time.sleep(0.05)  # waiting for another process to bind its socket
        assert run("submit", str(path)).returncode == 0, log.read_text()[-2000:]
        seen: dict[str, Any] = {}
        text = ""
        while time.monotonic() < deadline + 120 and not seen:
            info = json.loads(run("status", "st", "--json").stdout)
            if sum(e["scenarios"] for e in info["engines"]) == 4:
                seen, text = info, run("status", "st").stdout
            elif info["status"] == "finished":
                break
            time.sleep(0.2)  # polling another process's progress
        assert seen, "never saw all four scenarios placed"
        assert [(e["url"], e["healthy"], e["scenarios"], e["used"], e["slots"]) for e in seen["engines"]] == [
            (LOCAL, True, 2, 2, 2),
            (second_engine.url, True, 2, 2, 2),
        ]
        lines = [line for line in text.splitlines() if line.startswith("  engine ")]
        urls = (LOCAL, second_engine.url)
        healthy = [a.startswith(f"  engine {u}: healthy; ") for a, u in zip(lines, urls, strict=False)]
        assert len(lines) == 2 and all(healthy), text
        while json.loads(run("status", "st", "--json").stdout)["status"] != "finished":
            assert time.monotonic() < deadline + 240, "the sweep did not finish"
            time.sleep(0.2)  # polling another process's progress
    finally:
        if json.loads(run("status", "st", "--json").stdout or "{}").get("status") != "finished":
            run("cancel", "st")  # a cancelled sweep removes its containers; a stopped daemon would leave them
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=120)
    assert sorted(stored_engines(state).values()) == sorted([LOCAL, LOCAL, second_engine.url, second_engine.url])
