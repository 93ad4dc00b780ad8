"""Blame needs proof, in real sealed containers run as root (as the systemd unit runs the daemon): a hostile agent
attacking each step where the platform decides blame is always scored, never unscored, and a container really
killed from outside is still the platform's.

Each hostile agent writes the reference's correct code and attacks one step (`fault.py`, `hostile.py`): pid
exhaustion and fork chains left for the server start, a server that squeezes the pids whenever the launcher
wakes (start, readiness, port check, suite), one that signals every process it can see, one that hogs the pids
with fork chains when it is stopped, one that breaks the port check. Whatever its code then earns, its scenario
ends scored (`done` or `failed`) with no platform infra kind, beside a reference scenario that is not disturbed.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import aiodocker
import anyio
import pytest

from protocol.kinds import PLATFORM_KINDS
from staminad.engine.config import load_sweep
from staminad.sandbox.base import InsideFailure, NotReady, SandboxError
from staminad.sandbox.docker.bindsandbox import DockerSandbox, docker_factory
from staminad.sandbox.docker.container import OP_TIMEOUT
from staminad.sandbox.ports import PortAllocator
from tests.helpers.sweeps import sweep, write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.docker, pytest.mark.sweep]

# Each hostile agent, the step it attacks, and its verdict when every step judges by proof (`done`: its code is
# the reference's and nothing it does outside that code may cost it a turn).
HOSTILE = {
    "fault:fork-chains": ("fork chains left running when the turn is marked done", "done"),
    "fault:pid-filler": ("the pid limit held when the turn is marked done", "done"),
    "fault:pid-trick": ("every free pid taken whenever the launcher wakes, freed 40 ms later", "done"),
    "fault:hostile-server": ("the launcher and every root process signalled, its FIFO written", "done"),
    "fault:teardown-hog": ("TERM ignored, fork chains and the pid limit taken at teardown", "done"),
    "fault:forked-server": ("the port held outside the server's group (the port check)", "failed"),
}


def _sweep_file(tmp: Path, name: str, agents: list[str], image: str) -> Path:
    path = write_sweep(
        tmp, name, agents, turns=1, retries=0, runtime="docker", extra=f'image = "{image}"\nrequest_timeout = 2\n'
    )
    text = path.read_text().replace("turn_timeout = 20", "turn_timeout = 90")
    path.write_text(text.replace("server_start_timeout = 5", "server_start_timeout = 20"))
    return path


def _workspace(state: Path, name: str, agents: list[str], agent: str) -> Path:
    return state / "sandboxes" / name / f"c{agents.index(agent) + 1}-s0" / "workspace"


async def test_a_hostile_agent_at_every_step_is_scored_never_unscored(tmp_path: Path, sandbox_image: str) -> None:
    """Every hostile agent ends scored with no platform fault, as its code earns; the neighbour is undisturbed."""
    assert os.getuid() == 0, "run as root, as the daemon's unit runs: the agent is then another user"
    name = "hostile-steps"
    agents = [*HOSTILE, "reference"]
    path = _sweep_file(tmp_path, name, agents, sandbox_image)
    sw, _ = load_sweep(path)
    state = tmp_path / "state"
    res = await sweep(path, state, factory=docker_factory(sw.run, PortAllocator()))
    for agent, (step, verdict) in {**HOSTILE, "reference": ("none", "done")}.items():
        s = res[f"{agent} R=0 detailed"]
        assert not set(s.infra) & set(PLATFORM_KINDS), (agent, step, s.infra)
        assert s.statuses == {verdict: 1}, (agent, step, s.statuses, s.infra)
        assert s.mean_turns == (2 if verdict == "done" else 0), (agent, step)
    # The attacks ran: the squeeze held pids while the launcher worked, the hog was stopped and turned on it.
    trick = json.loads((_workspace(state, name, agents, "fault:pid-trick") / ".pid-trick.json").read_text())
    assert trick["launchers"] >= 1 and trick["squeezes"] >= 1 and trick["held"] > 0, trick
    hog = json.loads((_workspace(state, name, agents, "fault:teardown-hog") / ".teardown-hog.json").read_text())
    assert hog["termed"], hog  # its chains then take the CPU: how many it started before the KILL varies
    tried = json.loads((_workspace(state, name, agents, "fault:hostile-server") / ".hostile-server.json").read_text())
    on_root = {what: got for what, got in tried.items() if " uid 0 " in what or "FIFO" in what}
    assert any("launcher.py" in what for what in on_root), sorted(tried)
    assert set(on_root.values()) == {"PermissionError"}, on_root


async def test_a_recreated_container_is_not_lost_to_its_predecessors_removal_but_a_kill_from_outside_is(
    tmp_path: Path, sandbox_image: str
) -> None:
    """After a re-creation the old container's destroy is not a loss; a `docker kill` of the new one is."""
    path = _sweep_file(tmp_path, "recreated", ["reference"], sandbox_image)
    sw, _ = load_sweep(path)
    async with aiodocker.Docker() as client:
        box = DockerSandbox(client, tmp_path / "recreated" / "c1-s0", "recreated", "x", sw.run, PortAllocator())
        try:
            await box.prepare()
            first = (await box._container()).id
            await box.close()  # what the engine does on a loss: the old container is killed and destroyed
            await box.prepare()
            assert (await box._container()).id != first
            since = time.time() - OP_TIMEOUT  # what a server start's judgement looks back over
            assert await box.health(since) is None
            refused = SandboxError("the engine refused an exec", "engine_error")
            assert await box._judged(refused) is refused  # the engine's own failure stays the platform's
            inside = await box._judged(InsideFailure("the sandbox launcher did not answer listeners within 60 s"))
            assert isinstance(inside, NotReady) and inside.kind == "server_exhausted"
            await anyio.run_process(["docker", "kill", box.name])
            loss = await box.health(since)
            assert loss is not None and loss.kind == "sandbox_lost" and "by kill" in loss.detail, loss
            lost = await box._judged(InsideFailure("the sandbox launcher did not answer listeners within 60 s"))
            assert isinstance(lost, SandboxError) and lost.kind == "sandbox_lost"
        finally:
            await box.close()
