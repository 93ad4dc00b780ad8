"""The engine in real Docker containers: same results as local, labelled containers, faults, lost containers."""

from __future__ import annotations

from pathlib import Path

import aiodocker
import pytest

from staminad.engine.config import load_sweep
from staminad.sandbox.docker.bindsandbox import LABEL_SANDBOXES, LABEL_SWEEP, DockerSandbox, docker_factory
from staminad.sandbox.ports import PortAllocator
from tests.helpers.sweeps import sweep, write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.docker, pytest.mark.sweep]


async def test_docker_sweep_matches_local_results(tmp_path: Path, sandbox_image: str) -> None:
    """Reference and a mutant give the same turns in containers as with local processes; containers are removed."""
    agents = ["reference", "mutant:no-cascade"]
    extra = f'image = "{sandbox_image}"\n'
    docker_path = write_sweep(tmp_path, "dock", agents, seeds="0-1", turns=3, runtime="docker")
    docker_path.write_text(docker_path.read_text() + extra)
    local = await sweep(write_sweep(tmp_path, "loc", agents, seeds="0-1", turns=3), tmp_path / "l")
    sw, _ = load_sweep(docker_path)
    docker = await sweep(docker_path, tmp_path / "d", factory=docker_factory(sw.run, PortAllocator()))
    assert [(s.mean_turns, s.statuses) for s in docker.values()] == [(s.mean_turns, s.statuses) for s in local.values()]
    async with aiodocker.Docker() as client:
        mine = f"{LABEL_SANDBOXES}={(tmp_path / 'd' / 'sandboxes' / 'dock').resolve()}"
        assert await client.containers.list(all=True, filters={"label": [mine]}) == []


async def test_self_kill_inside_a_container_is_classified(tmp_path: Path, sandbox_image: str) -> None:
    """A broad pkill inside the container kills the harness; the engine records self_kill and recovers."""
    path = write_sweep(tmp_path, "dkill", ["fault:self-kill:once"], turns=1, retries=0, runtime="docker")
    path.write_text(path.read_text() + f'image = "{sandbox_image}"\n')
    sw, _ = load_sweep(path)
    res = await sweep(path, tmp_path / "s", factory=docker_factory(sw.run, PortAllocator()))
    s = res["fault:self-kill:once R=0 detailed"]
    assert s.statuses == {"done": 1} and s.infra == {"self_kill": 1}


async def test_lost_container_is_recreated_on_the_kept_workspace(tmp_path: Path, sandbox_image: str) -> None:
    """Deleting a scenario's container: `prepare` recreates it and the workspace files are still there."""
    path = write_sweep(tmp_path, "lost", ["reference"], runtime="docker")
    path.write_text(path.read_text() + f'image = "{sandbox_image}"\n')
    sw, _ = load_sweep(path)
    async with aiodocker.Docker() as client:
        box = DockerSandbox(client, tmp_path / "lost" / "c1-s0", "lost", "x", sw.run, PortAllocator())
        await box.prepare()
        (box.host_workspace / "keep.txt").write_text("agent code")
        await (await client.containers.get(box.name)).delete(force=True)
        await box.prepare()
        assert await box._exec(["cat", "/workspace/keep.txt"]) == 0
        info = await (await client.containers.get(box.name)).show()
        assert info["HostConfig"]["PidsLimit"] == sw.run.pids and info["HostConfig"]["Memory"] > 0
        assert not any("docker.sock" in b for b in info["HostConfig"]["Binds"])
        assert info["Config"]["Labels"][LABEL_SWEEP] == "lost"
        assert info["HostConfig"]["PortBindings"]["18080/tcp"][0]["HostIp"] == "127.0.0.1"
        await box.close()


async def test_sweeps_of_one_name_in_two_state_dirs_keep_their_own_containers(
    tmp_path: Path, sandbox_image: str
) -> None:
    """Two daemons' sweeps named alike get distinct containers, and ending one reaps only its own."""
    path = write_sweep(tmp_path, "same", ["reference"], runtime="docker")
    path.write_text(path.read_text() + f'image = "{sandbox_image}"\n')
    sw, _ = load_sweep(path)
    ours, theirs = docker_factory(sw.run, PortAllocator()), docker_factory(sw.run, PortAllocator())
    mine = ours(tmp_path / "a" / "sandboxes" / "same" / "c1-s0", "reference/0")
    other = theirs(tmp_path / "b" / "sandboxes" / "same" / "c1-s0", "reference/0")
    assert isinstance(mine, DockerSandbox) and isinstance(other, DockerSandbox)
    try:
        await mine.prepare()
        await other.prepare()
        assert mine.name != other.name and mine.port != other.port
        (mine.host_workspace / "who").write_text("a")
        (other.host_workspace / "who").write_text("b")
        await mine.prepare()  # adopting an existing container finds its own, with its own workspace
        assert await mine._exec(["grep", "-q", "a", "/workspace/who"]) == 0
        assert await mine._exec(["test", "-f", "/harness/sandbox/inside/wrapper.sh"]) == 0  # its layer, still mounted
        await ours.aclose(tmp_path / "a" / "sandboxes" / "same")
        async with aiodocker.Docker() as client:
            info = await (await client.containers.get(other.name)).show()
            assert info["State"]["Running"]
            assert info["Config"]["Labels"][LABEL_SANDBOXES] == str((tmp_path / "b" / "sandboxes" / "same").resolve())
    finally:
        await other.close()
        await theirs.aclose(tmp_path / "b" / "sandboxes" / "same")
