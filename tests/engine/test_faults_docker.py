"""Blame on the right side in real containers: a container lost at any phase is one `sandbox_lost` retry of its
scenario, a container ended from inside is the harness's fault, and a port held by an earlier server is the agent's."""

from __future__ import annotations

import subprocess
from pathlib import Path

import aiodocker
import anyio
import pytest
from asyncinotify import Inotify, Mask

from protocol.events import EventData, SuiteStarted
from staminad.engine.config import load_sweep
from staminad.engine.ports import PortAllocator
from staminad.sandbox.base import NotReady
from staminad.sandbox.docker import DockerSandbox, container_name, docker_factory
from state.store import Store
from tests.engine.conftest import Recorder, sweep, write_sweep

pytestmark = pytest.mark.anyio

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


def _docker_sweep(tmp: Path, name: str, agent: str, image: str, retries: int = 0, extra: str = "") -> Path:
    path = write_sweep(tmp, name, [agent], turns=1, retries=retries, runtime="docker",
                       extra=f'image = "{image}"\nrequest_timeout = 2\n{extra}')
    # Bounds a loaded machine keeps with margin: the slow-start server takes 3 s to listen.
    path.write_text(path.read_text().replace("turn_timeout = 20", "turn_timeout = 10")
                    .replace("server_start_timeout = 5", "server_start_timeout = 15"))
    return path


@pytest.mark.parametrize("action", list(ACTIONS))
@pytest.mark.parametrize("phase", ["harness", "server", "suite"])
async def test_a_lost_container_is_one_sandbox_lost_retry(tmp_path: Path, sandbox_image: str, phase: str,
                                                         action: str) -> None:
    """docker kill / rm -f / pause (past every bound) while the harness runs, the server starts or the suite runs:
    exactly one sandbox_lost, then the scenario ends as an undisturbed reference run does."""
    agent = {"harness": "fault:hang:once", "server": "fault:slow-start", "suite": "reference"}[phase]
    name = f"lost-{phase}-{action}"
    path = _docker_sweep(tmp_path, name, agent, sandbox_image)
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


@pytest.mark.xfail(reason="open after the merge: in the sealed sandbox the agent can no longer end its container")
async def test_a_container_ended_from_inside_is_the_harness_fault(tmp_path: Path, sandbox_image: str) -> None:
    """The harness stopping its own container is `sandbox_exited` (harness side, scored if it persists)."""
    path = _docker_sweep(tmp_path, "inside", "fault:kill-sandbox:once", sandbox_image)
    sw, _ = load_sweep(path)
    res = await sweep(path, tmp_path / "state", factory=docker_factory(sw.run, PortAllocator()))
    s = res["fault:kill-sandbox:once R=0 detailed"]
    assert s.statuses == {"done": 1} and s.mean_turns == 2 and s.infra == {"sandbox_exited": 1}


@pytest.mark.parametrize(("fault", "kind"), [
    ("no-server", "server_not_listening"), ("accept-close", "server_closed_connection"),
    pytest.param("forked-server", "server_left_running", marks=pytest.mark.xfail(
        reason="merged tree: in the sealed sandbox the forked child is not recognised as left running; open")),
    ("huge-response", "server_bad_response"),
])
async def test_a_broken_server_in_a_container_is_the_agents_failure(tmp_path: Path, sandbox_image: str, fault: str,
                                                                    kind: str) -> None:
    """Through Docker's port proxy too, each broken server is scored under its category and uses a retry of R."""
    path = _docker_sweep(tmp_path, f"dsrv-{fault}", f"fault:{fault}:once", sandbox_image, retries=1)
    sw, _ = load_sweep(path)
    res = await sweep(path, tmp_path / "state", factory=docker_factory(sw.run, PortAllocator()))
    s = res[f"fault:{fault}:once R=1 detailed"]
    assert s.statuses == {"done": 1} and s.mean_turns == 2 and s.infra == {}
    async with await Store.open(tmp_path / "state" / "staminad.db") as store:
        rows = await store.attempts((await store.scenarios(f"dsrv-{fault}"))[0][1].id)
    assert [(r.attempt, r.outcome, r.categories) for r in rows[:2]] == [(1, "fail", kind), (2, "pass", "")]


async def test_a_server_left_running_on_the_port_is_not_tested(tmp_path: Path, sandbox_image: str) -> None:
    """A process started earlier still holding the server port fails the start as the agent's, with feedback."""
    path = _docker_sweep(tmp_path, "held", "reference", sandbox_image)
    sw, _ = load_sweep(path)
    async with aiodocker.Docker() as client:
        box = DockerSandbox(client, tmp_path / "held" / "c1-s0", "held", "x", sw.run, PortAllocator())
        try:
            await box.prepare()
            (box.host_workspace / "run_server.sh").write_text('exec python3 -m http.server --bind 0.0.0.0 "$1"\n')
            assert await box._exec(["python3", "-c", STRAY]) == 0  # returns once the stray server listens
            with pytest.raises(NotReady) as info:
                await box.start_server(10, 2)
            assert info.value.kind == "server_left_running" and "started before this server" in str(info.value)
            assert not (await box._listeners(0))["sockets"]  # stopping the failed start cleared the port
        finally:
            await box.close()
