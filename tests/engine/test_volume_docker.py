"""The engine on volume sandboxes (`[run] workspace = "volume"`): the same results as bind mounts, snapshots and
logs back on the daemon's disk, and a daemon killed -9 mid-harness whose successor runs nothing twice."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiodocker
import aiohttp
import anyio
import pytest

from staminad.engine.config import RunSettings, load_sweep
from staminad.engine.runtime import RuntimeUnavailable, choose_runtime
from staminad.sandbox.base import Grant
from staminad.sandbox.docker.bindsandbox import LABEL_SANDBOXES, docker_factory, reap
from staminad.sandbox.docker.container import container_name, reap_volumes
from staminad.sandbox.docker.volumefactory import VolumeFactory, volume_factory
from staminad.sandbox.docker.volumesandbox import VolumeSandbox
from staminad.sandbox.markers import MarkerWatcher
from staminad.sandbox.ports import PortAllocator
from tests.helpers.sweeps import sweep, write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.docker, pytest.mark.sweep]

NO_WATCHER = MarkerWatcher()  # volume sandboxes never use the daemon's inotify watcher

# A daemon that prepares a volume sandbox, launches a job and is then killed -9 (by the test) while the job runs.
DAEMON = """
import anyio, sys
from pathlib import Path
from staminad.engine.config import RunSettings
from staminad.sandbox.docker.volumefactory import VolumeFactory

async def main():
    box = VolumeFactory(RunSettings(image=sys.argv[2], workspace="volume"))(Path(sys.argv[1]), "x")
    await box.prepare()
    await box.seed({"job.sh": "echo ran >> /workspace/runs; while [ ! -e /workspace/go ]; do sleep 0.1; done"})
    await box.launch("job", ["sh", "/workspace/job.sh"], {})
    print("launched", flush=True)
    await anyio.sleep(3600)

anyio.run(main)
"""


async def test_volume_sweep_matches_mount_results(tmp_path: Path, sandbox_image: str) -> None:
    """A volume sweep gives the bind-mount results, a snapshot per tested attempt, mirrored logs, no leftovers."""
    agents = ["reference", "mutant:no-cascade"]
    extra = f'image = "{sandbox_image}"\n'
    mount = write_sweep(tmp_path, "mnt", agents, turns=2, runtime="docker")
    mount.write_text(mount.read_text() + extra)
    vol = write_sweep(tmp_path, "vol", agents, turns=2, runtime="docker")
    vol.write_text(vol.read_text() + extra + 'workspace = "volume"\n')
    sw, _ = load_sweep(mount)
    mounted = await sweep(mount, tmp_path / "m", factory=docker_factory(sw.run, PortAllocator()))
    sv, _ = load_sweep(vol)
    volumed = await sweep(vol, tmp_path / "v", factory=volume_factory(sv.run))
    assert [(s.mean_turns, s.statuses) for s in volumed.values()] == [
        (s.mean_turns, s.statuses) for s in mounted.values()
    ]
    with sqlite3.connect(next((tmp_path / "v").rglob("*.db"))) as db:
        rows = db.execute("SELECT snapshot_bytes, snapshot_skipped FROM attempts WHERE outcome != 'infra'").fetchall()
    assert rows and all(size and size > 0 and skipped is None for size, skipped in rows)
    sandboxes = (tmp_path / "v" / "sandboxes" / "vol").resolve()
    assert list(sandboxes.rglob("snapshots/workspace.tar.gz")) and list(sandboxes.rglob("control/jobs/*/log"))
    label = f"{LABEL_SANDBOXES}={sandboxes}"
    async with aiodocker.Docker() as client:
        assert await client.containers.list(all=True, filters={"label": [label]}) == []
        assert not (await client.volumes.list(filters={"label": [label]})).get("Volumes")


async def test_a_restarted_daemon_finds_the_running_harness_on_volumes_and_nothing_runs_twice(
    tmp_path: Path, sandbox_image: str
) -> None:
    """A daemon restarted mid-harness adopts the volume container and reads its marker; the job ran once."""
    root = tmp_path / "sandboxes" / "resume" / "c1-s0"
    daemon = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(DAEMON), str(root), sandbox_image],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        assert daemon.stdout is not None
        with anyio.fail_after(120):
            line = await anyio.to_thread.run_sync(daemon.stdout.readline)
        assert line.strip() == "launched"
    finally:
        os.kill(daemon.pid, signal.SIGKILL)
        daemon.wait()
    factory = VolumeFactory(RunSettings(image=sandbox_image, workspace="volume"))
    box = factory(root, "x")
    try:
        await box.prepare()  # adopts the running container
        state = await box.job_state("job")
        assert state.written and state.started and state.marker is None
        assert await box.job_alive("job")
        await box.seed({"go": ""})
        marker = await box.wait_marker("job", 60, NO_WATCHER)
        assert marker is not None and marker["exit"] == 0
        await box.seed({"check.sh": "cat /workspace/runs"})
        await box.launch("check", ["sh", "/workspace/check.sh"], {})
        assert await box.wait_marker("check", 60, NO_WATCHER) is not None
        assert (box.host_control / "jobs" / "check" / "log").read_text() == "ran\n"
    finally:
        await factory.aclose(root.parent)
        async with aiodocker.Docker() as docker:  # whatever the killed daemon's factory made is ours too
            await reap(docker, root.parent.resolve())
            await reap_volumes(docker, root.parent.resolve())


class CountingFactory(VolumeFactory):
    """Volume sandboxes that record every job they launch (the rerun must launch no job its predecessor did)."""

    def __init__(self, run: RunSettings) -> None:
        super().__init__(run)
        self.launched: list[str] = []

    def __call__(self, root: Path, label: str, grant: Grant = Grant()) -> VolumeSandbox:  # noqa: B008 - frozen
        box = super().__call__(root, label, grant)
        launch = box.launch

        async def counted(job_id: str, argv: list[str], env: dict[str, str]) -> None:
            self.launched.append(job_id)
            await launch(job_id, argv, env)

        box.launch = counted  # type: ignore[method-assign]
        return box


def _launched_row(db: Path) -> tuple[int, int, int] | None:
    """(turn, attempt, infra try) of an attempt of turn 1 or later whose harness was launched, if any yet."""
    if not db.exists():
        return None
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as conn:
        try:
            row = conn.execute(
                "SELECT turn, attempt, infra_try FROM attempts WHERE phase = 'launched' AND turn >= 1"
            ).fetchone()
        except sqlite3.OperationalError:  # the schema is not there yet
            return None
    return None if row is None else (int(row[0]), int(row[1]), int(row[2]))


# Counts the streaming launchers in a container: the killed daemon's ends once it has read all it was sent.
LAUNCHERS = (
    "import os\n"
    "def cmd(p):\n"
    "    try:\n"
    "        return open(f'/proc/{p}/cmdline', 'rb').read()\n"
    "    except OSError:\n"
    "        return b''\n"
    "print(sum(b'/streamlauncher.py\\0' in cmd(p) for p in os.listdir('/proc') if p.isdigit()))\n"
)


async def _launchers(box: VolumeSandbox) -> int:
    """How many streaming launchers run in `box`'s container (see LAUNCHERS)."""
    return int((await box._run(["python3", "-I", "-S", "-c", LAUNCHERS]))[1].strip())


async def _started_once_settled(root: Path, run: RunSettings, job: str) -> bool:
    """Whether `job`'s harness was started, read once the killed daemon's launcher has ended (so no request of
    that daemon is still on its way); the container is left running for the rerun."""
    box = VolumeFactory(run)(root, "probe")
    try:
        with anyio.fail_after(60):
            while await _launchers(box) != 0:  # noqa: ASYNC110 - a process inside ending; nothing to await here
                await anyio.sleep(0.1)
        started = (await box.job_state(job)).started
        assert await _launchers(box) == 1  # the probe's own launcher: the count sees a real one (so the wait did)
        return started
    finally:
        await box.stream.close()
        await box.docker.close()


async def test_kill_9_of_staminad_run_mid_harness_then_a_rerun_runs_the_harness_once(
    tmp_path: Path, sandbox_image: str
) -> None:
    """`staminad run` killed -9 mid-harness and rerun adopts the container and launches no job twice."""
    path = write_sweep(tmp_path, "kill", ["reference"], turns=3, runtime="docker", patient=True)
    path.write_text(path.read_text() + f'image = "{sandbox_image}"\nworkspace = "volume"\n')
    state = tmp_path / "state"
    db = state / "staminad.db"
    run = subprocess.Popen(
        [sys.executable, "-m", "staminad.cli", "run", str(path), "--state-dir", str(state), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=Path(__file__).parents[2],
    )
    sw, _ = load_sweep(path)
    factory = CountingFactory(sw.run)
    try:
        with anyio.fail_after(240):
            while (row := _launched_row(db)) is None:
                assert run.poll() is None, "staminad run ended before its second turn"
                await anyio.sleep(0.05)  # polling another process's store; nothing to await instead
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
        turn, attempt, infra = row
        job = f"t{turn:04d}-a{attempt:02d}-i{infra:02d}"
        started = await _started_once_settled(next((state / "sandboxes" / "kill").iterdir()), sw.run, job)
        res = await sweep(path, state, factory=factory)
        s = res["reference R=2 detailed"]
        assert s.statuses == {"done": 1} and s.mean_turns == 4 and s.infra == {}  # turn 0 and 3 changes
        with contextlib.closing(sqlite3.connect(db)) as conn:
            n = conn.execute("SELECT COUNT(*) FROM attempts WHERE turn = ?", (turn,)).fetchone()[0]
        assert n == 1  # resumed, not retried
        # The rerun launched the killed daemon's job only if that one had not started its harness.
        assert factory.launched.count(job) == (0 if started else 1)
        assert all(int(j[1:5]) > turn for j in factory.launched if j != job)
    finally:
        if run.poll() is None:
            os.kill(run.pid, signal.SIGKILL)
            run.wait()
        sandboxes = (state / "sandboxes" / "kill").resolve()
        async with aiodocker.Docker() as docker:
            await reap(docker, sandboxes)
            await reap_volumes(docker, sandboxes)


async def test_a_volume_workspace_refuses_the_local_runtime() -> None:
    """`--runtime local` on a sweep with workspace = "volume" is refused in one line, never run as local processes."""
    with pytest.raises(RuntimeUnavailable, match="volumes"):
        await choose_runtime("local", RunSettings(workspace="volume"), PortAllocator())


async def test_faults_on_volumes_are_blamed_as_on_bind_mounts(tmp_path: Path, sandbox_image: str) -> None:
    """A self-kill, a hostile agent, a crash and a missing server end the same way on volumes as on bind mounts."""
    agents = ["fault:self-kill:once", "fault:hostile:once", "fault:crash:once", "fault:no-server"]
    extra = f'image = "{sandbox_image}"\nrequest_timeout = 2\n'
    mount = write_sweep(tmp_path, "fmnt", agents, turns=1, retries=0, runtime="docker", extra=extra)
    vol = write_sweep(
        tmp_path, "fvol", agents, turns=1, retries=0, runtime="docker", extra=extra + 'workspace = "volume"\n'
    )
    sm, _ = load_sweep(mount)
    mounted = await sweep(mount, tmp_path / "m", factory=docker_factory(sm.run, PortAllocator()))
    sv, _ = load_sweep(vol)
    volumed = await sweep(vol, tmp_path / "v", factory=volume_factory(sv.run))
    assert [(s.mean_turns, s.statuses, s.infra) for s in volumed.values()] == [
        (s.mean_turns, s.statuses, s.infra) for s in mounted.values()
    ]


def _results(db: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Each scenario's (configuration, seed, status, turns passed), each scored attempt's (configuration, seed,
    turn, attempt, outcome, failure categories, tests passed): what a sweep's results are, infra retries aside."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        scenarios = conn.execute(
            "SELECT c.name, s.seed, s.status, s.turns_passed FROM scenarios s "
            "JOIN configurations c ON c.id = s.config_id ORDER BY 1, 2"
        ).fetchall()
        attempts = conn.execute(
            "SELECT c.name, s.seed, a.turn, a.attempt, a.outcome, a.categories, a.passed_tests FROM attempts a "
            "JOIN scenarios s ON s.id = a.scenario_id JOIN configurations c ON c.id = s.config_id "
            "WHERE a.outcome != 'infra' ORDER BY 1, 2, 3, 4"
        ).fetchall()
    return scenarios, attempts


Trigger = Callable[[dict[str, Any]], bool]


def _early_points(names: set[str]) -> list[tuple[str, Trigger]]:
    """The engine events, in the order a first prepare makes them, at which a daemon is killed: a volume made, the
    container made, its seal's helper made, its launcher started, the workspace's hand-over helper made."""

    def attrs(e: dict[str, Any]) -> dict[str, Any]:
        return dict((e.get("Actor") or {}).get("Attributes") or {})

    def made(e: dict[str, Any], suffix: str) -> bool:
        return (
            e.get("Type") == "container"
            and e.get("Action") == "create"
            and attrs(e).get("name") in {n + suffix for n in names}
        )

    return [
        (
            "volume made",
            lambda e: (
                e.get("Type") == "volume"
                and e.get("Action") == "create"
                and str((e.get("Actor") or {}).get("ID", "")).rpartition("-")[0] in names
            ),
        ),
        ("container made", lambda e: made(e, "")),
        ("seal helper made", lambda e: made(e, "-seal")),
        (
            "launcher started",
            lambda e: (
                str(e.get("Action", "")).startswith("exec_start")
                and "streamlauncher.py" in str(e.get("Action"))
                and attrs(e).get("name") in names
            ),
        ),
        ("hand-over helper made", lambda e: made(e, "-chown")),
    ]


async def _run_until(cmd: list[str], triggers: list[tuple[str, Trigger]], log: Path) -> str | int:
    """Run `cmd` (a `staminad run`) and kill -9 it at the first engine event one of `triggers` matches: the name of
    that trigger, or the exit status of `cmd` when it ended first."""
    hit: str | None = None
    async with aiodocker.Docker() as client:
        since = f"{time.time() - 1:.3f}"  # events are replayed from here: none is missed while the query opens
        params = {"since": since, "filters": json.dumps({"type": ["container", "volume"]})}
        with log.open("ab") as err:
            proc = await anyio.open_process(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=Path(__file__).parents[2])
        try:
            async with client._query("events", params=params) as response, anyio.create_task_group() as tg:

                async def ended() -> None:
                    await proc.wait()
                    response.close()  # the reader below sees the end of the events

                tg.start_soon(ended)
                with contextlib.suppress(aiohttp.ClientError):
                    while hit is None and (line := await response.content.readline()):
                        event = json.loads(line)
                        hit = next((name for name, match in triggers if match(event)), None)
                if hit is not None:
                    proc.kill()  # SIGKILL
        finally:
            with anyio.CancelScope(shield=True):
                if proc.returncode is None:
                    proc.kill()
                await proc.wait()
                await proc.aclose()
    return hit if hit is not None else int(proc.returncode or 0)


async def test_kill_9_at_early_points_of_a_volume_sweep_changes_no_result(tmp_path: Path, sandbox_image: str) -> None:
    """`staminad run` killed -9 at each early step of volume preparation, then rerun, changes no result."""
    extra = f'image = "{sandbox_image}"\nworkspace = "volume"\n'
    agents = ["reference", "mutant:no-cascade"]
    path = write_sweep(tmp_path, "kvol", agents, seeds="0-1", retries=1, runtime="docker", extra=extra, patient=True)
    base = [sys.executable, "-m", "staminad.cli", "run", str(path), "--quiet", "--state-dir"]
    calm, killed, log = tmp_path / "calm", tmp_path / "killed", tmp_path / "runs.err"
    sandboxes = (killed / "sandboxes" / "kvol").resolve()
    try:
        with anyio.fail_after(600):
            assert await _run_until([*base, str(calm)], [], log) == 0
            names = {container_name("kvol", sandboxes / f"c{c}-s{s}") for c in (1, 2) for s in (0, 1)}
            points = _early_points(names)
            hits: list[str] = []
            for i in range(len(points)):  # each run is killed at the next point it reaches, or a later one
                hit = await _run_until([*base, str(killed)], points[i:], log)
                if not isinstance(hit, str):
                    assert hit == 0
                    break
                hits.append(hit)
            else:
                assert await _run_until([*base, str(killed)], [], log) == 0
        # Every run prepares its unfinished scenarios' sandboxes first, and each prepare seals and starts a launcher.
        order = [name for name, _ in points]
        assert hits[0] == "volume made" and len(hits) >= 4 and hits == sorted(hits, key=order.index), hits
        scenarios, attempts = _results(killed / "staminad.db")
        assert (scenarios, attempts) == _results(calm / "staminad.db"), hits
        assert "infra_failed" not in {status for _, _, status, _ in scenarios}
        async with aiodocker.Docker() as client:  # the sweep's end removed what the killed runs left
            label = f"{LABEL_SANDBOXES}={sandboxes}"
            assert await client.containers.list(all=True, filters={"label": [label]}) == []
            assert not (await client.volumes.list(filters={"label": [label]})).get("Volumes")
    finally:
        async with aiodocker.Docker() as docker:
            for state in (calm, killed):
                await reap(docker, (state / "sandboxes" / "kvol").resolve())
                await reap_volumes(docker, (state / "sandboxes" / "kvol").resolve())
