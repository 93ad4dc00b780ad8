"""Blame on the right side in real containers: a container lost at any phase is one `sandbox_lost` retry of its
scenario, a hostile agent cannot end its container and is scored for trying, a container whose init ended on its own
is the harness's side, a child the server detached holding the port is the agent's, and whatever the harness left
holding it is ended with the harness's phase."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import aiodocker
import anyio
import pytest
from asyncinotify import Inotify, Mask

from protocol.events import AttemptStarted, EventData, InfraFailure, SuiteStarted
from staminad.engine.config import load_sweep
from staminad.engine.outcome import HARNESS_KINDS, is_platform
from staminad.sandbox.docker.bindsandbox import DockerSandbox, agent_ids, container_name, docker_factory
from staminad.sandbox.docker.fifoclient import Channel
from staminad.sandbox.ports import PortAllocator
from state.store import Store
from tests.helpers.sweeps import Recorder, sweep, write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.docker, pytest.mark.sweep]

# A server an earlier turn left behind: binds the port, then detaches into its own session and serves.
STRAY = """
import http.server, os, socket
sock = socket.create_server(("0.0.0.0", 18080))
if os.fork():
    os._exit(0)
os.setsid()
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
srv = http.server.HTTPServer(("", 0), http.server.SimpleHTTPRequestHandler, bind_and_activate=False)
srv.socket = sock
srv.serve_forever()
"""

ACTIONS = {"kill": ["docker", "kill"], "rm": ["docker", "rm", "-f"], "pause": ["docker", "pause"]}


async def _appears(path: Path, timeout: float = 60) -> None:
    """Return once `path` exists (inotify on its directory), failing the test after `timeout` seconds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with Inotify() as inotify, anyio.fail_after(timeout):
        inotify.add_watch(path.parent, Mask.CREATE | Mask.MOVED_TO | Mask.CLOSE_WRITE)
        if path.exists():
            return
        async for event in inotify:
            if event.path is not None and event.path.name == path.name:
                return


def _docker_sweep(
    tmp: Path, name: str, agent: str, image: str, retries: int = 0, extra: str = "", turn_timeout: int = 10
) -> Path:
    path = write_sweep(
        tmp,
        name,
        [agent],
        turns=1,
        retries=retries,
        runtime="docker",
        extra=f'image = "{image}"\nrequest_timeout = 2\n{extra}',
    )
    # Bounds a loaded machine keeps with margin: the slow-start server takes 3 s to listen.
    path.write_text(
        path.read_text()
        .replace("turn_timeout = 20", f"turn_timeout = {turn_timeout}")
        .replace("server_start_timeout = 5", "server_start_timeout = 15")
    )
    return path


@pytest.mark.parametrize("action", list(ACTIONS))
@pytest.mark.parametrize("phase", ["harness", "server", "suite"])
async def test_a_lost_container_is_one_sandbox_lost_retry(
    tmp_path: Path, sandbox_image: str, phase: str, action: str
) -> None:
    """A container killed, removed or paused at any phase is exactly one sandbox_lost, then ends as reference."""
    agent = {"harness": "fault:hang:once", "server": "fault:slow-start", "suite": "reference"}[phase]
    name = f"lost-{phase}-{action}"
    # The retry's turn includes re-creating the container; only a pause waits the whole timeout out.
    path = _docker_sweep(tmp_path, name, agent, sandbox_image, turn_timeout=20 if action == "pause" else 30)
    state = tmp_path / "state"
    root = (state / "sandboxes" / name / "c1-s0").resolve()
    box = container_name(name, root)
    rec = Recorder()
    done = anyio.Event()

    def in_suite(data: EventData) -> None:
        if isinstance(data, SuiteStarted) and not done.is_set():
            subprocess.run([*ACTIONS[action], box], check=True, capture_output=True)  # before the first request
            done.set()

    async def disturb(trigger: Path) -> None:
        await _appears(trigger)
        await anyio.run_process([*ACTIONS[action], box])
        done.set()

    sw, _ = load_sweep(path)
    async with anyio.create_task_group() as tg:
        if phase == "suite":
            rec.hooks.append(in_suite)
        else:
            tg.start_soon(disturb, root / ("workspace/.fault-injected" if phase == "harness" else "control/server.pid"))
        res = await sweep(path, state, factory=docker_factory(sw.run, PortAllocator()), recorder=rec)
        tg.cancel_scope.cancel()
    assert done.is_set()
    s = res[f"{agent} R=0 detailed"]
    assert s.statuses == {"done": 1} and s.mean_turns == 2
    assert s.infra == {"sandbox_lost": 1}


async def test_a_hostile_agent_cannot_end_its_container_and_is_scored_for_trying(
    tmp_path: Path, sandbox_image: str
) -> None:
    """A hostile agent cannot end its container and is scored `harness_killed`; the retry reuses the container."""
    name = "hostile"
    path = _docker_sweep(tmp_path, name, "fault:hostile:once", sandbox_image)
    root = (tmp_path / "state" / "sandboxes" / name / "c1-s0").resolve()
    rec = Recorder()
    ids: list[str] = []
    launcher: list[bool] = []

    def container(data: EventData) -> None:
        if isinstance(data, AttemptStarted | InfraFailure):  # the first attempt starts before its container exists
            out = subprocess.run(
                [
                    "docker",
                    "inspect",
                    "-f",
                    "{{.Id}} {{.State.Running}} {{.State.StartedAt}}",
                    container_name(name, root),
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            ids.append(out.stdout.strip())
        if isinstance(data, InfraFailure):
            launcher.append(Channel(root / "control").reading())  # kill -9 -1 could not reach it either

    rec.hooks.append(container)
    sw, _ = load_sweep(path)
    res = await sweep(path, tmp_path / "state", factory=docker_factory(sw.run, PortAllocator()), recorder=rec)
    s = res["fault:hostile:once R=0 detailed"]
    assert s.statuses == {"done": 1} and s.mean_turns == 2 and s.infra == {"harness_killed": 1}
    assert "harness_killed" in HARNESS_KINDS and not is_platform("harness_killed")  # scored if it persists
    tried = json.loads((root / "workspace" / ".hostile.json").read_text())
    assert tried.pop("fill /tmp") == "OSError"  # ENOSPC: bounded, and the wrapper writes nothing there
    assert set(tried.values()) <= {"PermissionError", "OSError"}, tried  # EPERM, EACCES or EROFS
    # Seen as the attack was recorded, then at the retry and at turn 1: one container, running, never restarted.
    assert len(ids) == 4 and " true " in ids[1] and ids[1] == ids[2] == ids[3], ids
    assert launcher == [True]


async def test_a_container_whose_init_ends_on_its_own_is_sandbox_exited(tmp_path: Path, sandbox_image: str) -> None:
    """pid 1 ending with no kill, stop or removal by the engine is `sandbox_exited`: harness side, then recreated."""
    name = "exited"
    path = _docker_sweep(tmp_path, name, "fault:hang:once", sandbox_image)
    root = (tmp_path / "state" / "sandboxes" / name / "c1-s0").resolve()
    done = anyio.Event()

    async def end_init() -> None:
        await _appears(root / "workspace" / ".fault-injected")
        # An exec, not a kill: the engine records no kill, stop or destroy, as when the init dies by itself.
        await anyio.run_process(["docker", "exec", "-u", "0", container_name(name, root), "kill", "-TERM", "1"])
        done.set()

    sw, _ = load_sweep(path)
    async with anyio.create_task_group() as tg:
        tg.start_soon(end_init)
        res = await sweep(path, tmp_path / "state", factory=docker_factory(sw.run, PortAllocator()))
        tg.cancel_scope.cancel()
    assert done.is_set()
    s = res["fault:hang:once R=0 detailed"]
    assert s.statuses == {"done": 1} and s.mean_turns == 2 and s.infra == {"sandbox_exited": 1}
    assert "sandbox_exited" in HARNESS_KINDS and not is_platform("sandbox_exited")


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ("no-server", "server_not_listening"),
        ("accept-close", "server_closed_connection"),
        ("forked-server", "server_left_running"),
        ("huge-response", "server_bad_response"),
        ("nested-json", "server_bad_response"),  # past the probe: every test of the suite fails
    ],
)
async def test_a_broken_server_in_a_container_is_the_agents_failure(
    tmp_path: Path, sandbox_image: str, fault: str, kind: str
) -> None:
    """Through Docker's port proxy too, each broken server is scored under its category and uses a retry of R."""
    path = _docker_sweep(tmp_path, f"dsrv-{fault}", f"fault:{fault}:once", sandbox_image, retries=1)
    sw, _ = load_sweep(path)
    res = await sweep(path, tmp_path / "state", factory=docker_factory(sw.run, PortAllocator()))
    s = res[f"fault:{fault}:once R=1 detailed"]
    assert s.statuses == {"done": 1} and s.mean_turns == 2 and s.infra == {}
    async with await Store.open(tmp_path / "state" / "staminad.db") as store:
        rows = await store.attempts((await store.scenarios(f"dsrv-{fault}"))[0][1].id)
    assert [(r.attempt, r.outcome, r.categories) for r in rows[:2]] == [(1, "fail", (kind,)), (2, "pass", ())]
    if fault == "forked-server":  # the feedback names what holds the port, and why it does not count
        assert rows[0].feedback is not None and "-m refserver --config config.json" in rows[0].feedback
        assert "outside the process group" in rows[0].feedback


async def test_a_server_left_running_by_the_harness_is_ended_before_the_server_starts(
    tmp_path: Path, sandbox_image: str
) -> None:
    """A server the harness left holding the port is ended with its phase, so the new server answers."""
    path = _docker_sweep(tmp_path, "held", "reference", sandbox_image)
    sw, _ = load_sweep(path)
    async with aiodocker.Docker() as client:
        box = DockerSandbox(client, tmp_path / "held" / "c1-s0", "held", "x", sw.run, PortAllocator())
        try:
            await box.prepare()
            (box.host_workspace / "run_server.sh").write_text('exec python3 -m http.server --bind 0.0.0.0 "$1"\n')
            # As the agent (its harness or an earlier server): returns once the stray server listens.
            assert await box._exec(["python3", "-c", STRAY], user="{}:{}".format(*agent_ids())) == 0
            handle = await box.start_server(10, 2)
            assert handle.pgid is not None
            holders = (await box._listeners(handle.pgid)).holders
            assert holders and all(h.pgid == handle.pgid for h in holders)
            await box.stop_server(handle)
            assert not (await box._listeners(0)).sockets
        finally:
            await box.close()
