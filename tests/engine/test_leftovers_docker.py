"""What an agent leaves behind in its sandbox, on the real Docker runtime: never the host's, never the platform's.

Each fault agent here writes the reference's (correct) code, then leaves something hostile as its harness ends
(`fault.py`'s leftover faults), beside a neighbour `reference` scenario in the same sweep that must finish as if
alone. A detached pid filler or memory hog is ended with its phase (the verdict is the code's); a detached disk
writer past the quota is the agent's scored failure; links and non-directories planted where the host side
touches the workspace survive a container re-creation without the daemon following or writing through them; a
pause from outside during the suite is the platform's.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import aiodocker
import anyio
import pytest

from protocol.events import AttemptTested, EventData, SuiteStarted
from staminad.engine.config import load_sweep
from staminad.sandbox.docker.bindsandbox import DockerSandbox, agent_ids, container_name, docker_factory
from staminad.sandbox.inside.beneath import MOVED_ASIDE
from staminad.sandbox.ports import PortAllocator
from state.store import Store
from tests.helpers.sweeps import Recorder, sweep, write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.docker, pytest.mark.sweep]


def _sweep_file(tmp: Path, name: str, agents: list[str], image: str, retries: int = 0) -> Path:
    path = write_sweep(
        tmp, name, agents, turns=1, retries=retries, runtime="docker", extra=f'image = "{image}"\nrequest_timeout = 2\n'
    )
    path.write_text(path.read_text().replace("turn_timeout = 20", "turn_timeout = 60"))
    return path


def _tree(path: Path) -> dict[str, tuple[int, int, int]]:
    """Mode, owner and group of `path` and everything below it, links not followed."""
    out = {}
    for p in [path, *sorted(path.rglob("*"))]:
        st = p.lstat()
        out[str(p)] = (st.st_mode, st.st_uid, st.st_gid)
    return out


@pytest.mark.parametrize("fault", ["pid-filler", "memory-hog"])
async def test_a_process_left_holding_the_sandboxs_limits_is_ended_with_its_phase(
    tmp_path: Path, sandbox_image: str, fault: str
) -> None:
    """A detached pid filler or memory hog left at every `done` neither fails the code nor becomes a platform fault."""
    name = f"left-{fault}"
    path = _sweep_file(tmp_path, name, [f"fault:{fault}", "reference"], sandbox_image)
    sw, _ = load_sweep(path)
    res = await sweep(path, tmp_path / "state", factory=docker_factory(sw.run, PortAllocator()))
    for config in (f"fault:{fault} R=0 detailed", "reference R=0 detailed"):
        s = res[config]
        assert (s.statuses, s.mean_turns, s.infra) == ({"done": 1}, 2, {}), config


async def test_a_detached_disk_writer_past_the_quota_is_the_agents_scored_failure(
    tmp_path: Path, sandbox_image: str
) -> None:
    """A detached writer filling the workspace past its quota is the agent's scored failure; the neighbour passes."""
    name = "left-disk"
    path = _sweep_file(tmp_path, name, ["fault:disk-writer", "reference"], sandbox_image)
    sw, _ = load_sweep(path)
    state = tmp_path / "state"
    res = await sweep(path, state, factory=docker_factory(sw.run, PortAllocator()))
    assert (res["reference R=0 detailed"].statuses, res["reference R=0 detailed"].mean_turns) == ({"done": 1}, 2)
    s = res["fault:disk-writer R=0 detailed"]
    assert (s.statuses, s.mean_turns, s.infra) == ({"failed": 1}, 0, {})
    async with await Store.open(state / "staminad.db") as store:
        rows = await store.attempts((await store.scenarios(name))[0][1].id)
    assert [(r.turn, r.outcome, r.categories) for r in rows] == [(0, "fail", ("server_exhausted",))]
    assert rows[0].feedback is not None and "quota" in rows[0].feedback
    ballast = next((state / "sandboxes" / name).glob("c1-*")) / "workspace" / "ballast-0.bin"
    size = ballast.stat().st_size
    assert ballast.stat().st_size == size  # nobody writes it any more: the sweep removed the container too


async def test_planted_links_and_non_directories_survive_recreation_without_reaching_the_host(
    tmp_path: Path, sandbox_image: str
) -> None:
    """Planted links, FIFOs and sparse files survive container re-creation without any host path changing."""
    name = "planted"
    agents = ["fault:plant-links", "fault:plant-specials", "reference"]
    path = _sweep_file(tmp_path, name, agents, sandbox_image)
    sw, _ = load_sweep(path)
    state = tmp_path / "state"
    sandboxes = (state / "sandboxes" / name).resolve()
    before: dict[str, dict[str, tuple[int, int, int]]] = {}
    removed: list[str] = []
    rec = Recorder()

    def remove_after_turn_0(data: EventData) -> None:
        if isinstance(data, AttemptTested) and data.turn == 0 and data.configuration.startswith("fault:"):
            root = sandboxes / f"c{agents.index(data.configuration.split(' ')[0]) + 1}-s0"
            before[str(root)] = {k: v for k, v in _tree(root).items() if "/workspace" not in k}
            subprocess.run(["docker", "rm", "-f", container_name(name, root)], check=True, capture_output=True)
            removed.append(data.configuration)

    rec.hooks.append(remove_after_turn_0)
    etc = _tree(Path("/etc/systemd")) if Path("/etc/systemd").is_dir() else {}
    res = await sweep(path, state, factory=docker_factory(sw.run, PortAllocator()), recorder=rec)
    assert sorted(removed) == ["fault:plant-links R=0 detailed", "fault:plant-specials R=0 detailed"]
    for config in agents:
        s = res[f"{config} R=0 detailed"]
        assert (s.statuses, s.mean_turns) == ({"done": 1}, 2), config
        assert set(s.infra) <= {"sandbox_lost"}, config  # the removal, re-run on a re-created container
    for root, tree in before.items():
        after = {k: v for k, v in _tree(Path(root)).items() if "/workspace" not in k}
        assert {k: v for k, v in after.items() if k in tree} == tree, root  # nothing there was chowned
        assert not (Path(root) / "planted-by-the-agent").exists()
        # The re-creation moved the planted `.home` aside and made a directory (the agent planted it again after).
        aside = Path(root) / "workspace" / f".home{MOVED_ASIDE}"
        assert aside.is_symlink() or aside.is_file()
    assert (_tree(Path("/etc/systemd")) if etc else {}) == etc


async def test_a_sandbox_prepared_again_never_writes_through_the_agents_links(
    tmp_path: Path, sandbox_image: str
) -> None:
    """A sandbox prepared again never writes through the agent's links to host paths."""
    host_dir = tmp_path / "host-owned"
    host_dir.mkdir()
    os.chmod(host_dir, 0o700)
    target = tmp_path / "host-file"
    path = _sweep_file(tmp_path, "relink", ["reference"], sandbox_image)
    sw, _ = load_sweep(path)
    root = tmp_path / "relink" / "c1-s0"
    who = "{}:{}".format(*agent_ids())
    async with aiodocker.Docker() as client:
        box = DockerSandbox(client, root, "relink", "x", sw.run, PortAllocator())
        try:
            await box.prepare()
            await box.seed({"README.md": "r", "initial_specification.md": "s"})
            script = (
                f"rm -rf /workspace/.home /workspace/initial_specification.md && "
                f"ln -s {host_dir} /workspace/.home && ln -s {target} /workspace/initial_specification.md && "
                "mkfifo /workspace/zz.py"
            )
            assert await box._exec(["sh", "-c", script], user=who) == 0
            before = _tree(host_dir)
            await box.close()
            for again in (box, DockerSandbox(client, root, "relink", "x", sw.run, PortAllocator())):
                await again.prepare()
                await again.seed({"README.md": "r", "initial_specification.md": "s"})
                assert await again.count_loc() >= 0  # the FIFO does not hang the count
                box = again
            assert _tree(host_dir) == before and not target.exists()
            assert (root / "workspace" / ".home").is_dir()
        finally:
            await box.close()


async def test_a_pause_from_outside_during_the_suite_is_the_platforms(tmp_path: Path, sandbox_image: str) -> None:
    """A `docker pause` past the request budget during the suite is one `sandbox_lost`, never the server's."""
    name = "paused-suite"
    path = _sweep_file(tmp_path, name, ["reference"], sandbox_image)
    sw, _ = load_sweep(path)
    state = tmp_path / "state"
    box = container_name(name, (state / "sandboxes" / name / "c1-s0").resolve())
    rec = Recorder()
    paused = anyio.Event()

    def in_suite(data: EventData) -> None:
        if isinstance(data, SuiteStarted) and not paused.is_set():
            subprocess.run(["docker", "pause", box], check=True, capture_output=True)
            paused.set()

    async def unpause() -> None:
        await paused.wait()
        await anyio.sleep(3)  # the outage itself: longer than the request budget of 2 s
        await anyio.run_process(["docker", "unpause", box], check=False)  # gone already if the suite ended first

    rec.hooks.append(in_suite)
    async with anyio.create_task_group() as tg:
        tg.start_soon(unpause)
        res = await sweep(path, state, factory=docker_factory(sw.run, PortAllocator()), recorder=rec)
    s = res["reference R=0 detailed"]
    assert (s.statuses, s.mean_turns, s.infra) == ({"done": 1}, 2, {"sandbox_lost": 1})


async def test_a_pause_that_ended_is_still_seen_in_the_engines_record(tmp_path: Path, sandbox_image: str) -> None:
    """A container paused and resumed since a time is `frozen`; one not paused since says nothing."""
    path = _sweep_file(tmp_path, "frozen", ["reference"], sandbox_image)
    sw, _ = load_sweep(path)
    async with aiodocker.Docker() as client:
        box = DockerSandbox(client, tmp_path / "frozen" / "c1-s0", "frozen", "x", sw.run, PortAllocator())
        try:
            await box.prepare()
            before = time.time()
            assert await box.frozen(before - 0.5) == ""
            await anyio.run_process(["docker", "pause", box.name])
            await anyio.run_process(["docker", "unpause", box.name])
            assert await box.health(before) is None  # running again: health alone cannot tell
            assert "paused from outside" in await box.frozen(before)
        finally:
            await box.close()
