"""Volume sandboxes on a real engine: files in and out only through the API, no bind mount of the daemon's disk,
the agent unable to touch the layer, prompts or markers, snapshots that restore, and clean-up by label."""

from __future__ import annotations

import gzip
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiodocker
import aiohttp
import pytest

from staminad.engine.config import RunSettings
from staminad.sandbox.codekeep import read_listing, read_text
from staminad.sandbox.docker.placementfiles import SNAPSHOT
from staminad.sandbox.docker.replies import A
from staminad.sandbox.docker.requests import Request
from staminad.sandbox.docker.snapshot import tar_bytes
from staminad.sandbox.docker.volumefactory import VolumeFactory
from staminad.sandbox.docker.volumesandbox import VolumeSandbox
from staminad.sandbox.docker.volumeset import PARTS
from staminad.sandbox.markers import MarkerWatcher

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

NO_WATCHER = MarkerWatcher()  # volume sandboxes never use the daemon's inotify watcher


@pytest.fixture
async def volumes(tmp_path: Path, sandbox_image: str) -> AsyncIterator[VolumeFactory]:
    """A volume factory for this test's sweep directory; its containers and volumes are reaped afterwards."""
    factory = VolumeFactory(RunSettings(image=sandbox_image, workspace="volume"))
    try:
        yield factory
    finally:
        await factory.aclose(tmp_path / "sandboxes" / "vol")


async def run_job(box: VolumeSandbox, job: str, script: str) -> tuple[dict[str, object], str]:
    """Run a shell script as the agent's harness (wrapper, agent uid); (its marker, its mirrored log)."""
    await box.seed({f"{job}.sh": textwrap.dedent(script)})
    await box.launch(job, ["sh", f"/workspace/{job}.sh"], {})
    marker = await box.wait_marker(job, 60, NO_WATCHER)
    assert marker is not None
    return dict(marker), (box.host_control / "jobs" / job / "log").read_text()


async def test_a_job_runs_on_volumes_and_nothing_is_bind_mounted(tmp_path: Path, volumes: VolumeFactory) -> None:
    """Seeded files reach the agent, its marker and log come back through the launcher, and no mount is a bind."""
    box = volumes(tmp_path / "sandboxes" / "vol" / "c1-s0", "reference/0")
    await box.prepare()
    await box.seed({"README.md": "the rules"})
    await box.seed({"README.md": "not written twice"})
    prompt = await box.put_prompt("t0", "build it")
    assert (await box.job_state("t0")).written is False
    marker, log = await run_job(
        box,
        "t0",
        f"cat {prompt}; echo; cat README.md; echo; id -u; printf 'x = 1\\n' > app.py; echo 'y = 2' >> app.py\n",
    )
    assert marker["exit"] == 0 and log.split() == ["build", "it", "the", "rules", "1000"]
    state = await box.job_state("t0")
    assert state.written and state.started and state.marker is not None and state.marker["exit"] == 0
    assert await box.count_loc() == 3  # app.py and the job script t0.sh
    async with aiodocker.Docker() as client:
        info = await (await client.containers.get(box.name)).show()
    assert info["HostConfig"].get("Binds") in (None, [])
    assert {m["Type"] for m in info["Mounts"]} == {"volume"}
    assert {m["Name"] for m in info["Mounts"]} == {box.volume(p) for p in PARTS}


async def test_the_agent_cannot_change_the_layer_prompts_or_markers(tmp_path: Path, volumes: VolumeFactory) -> None:
    """As the agent, writing the layer, a prompt, a job command or a marker fails; its own workspace is writable."""
    box = volumes(tmp_path / "sandboxes" / "vol" / "c1-s0", "reference/0")
    await box.prepare()
    prompt = await box.put_prompt("t0", "build it")
    script = f"""
    for target in /harness/sandbox/inside/wrapper.sh {prompt} /opt/stamina/control/markers/t0.json \\
            /opt/stamina/control/jobs/t0/cmd /opt/stamina/layer/x; do
        if (echo forged > "$target") 2>/dev/null; then echo "WROTE $target"; else echo "refused $target"; fi
    done
    cat /opt/stamina/control/jobs/t0/cmd 2>/dev/null && echo READ-CMD
    echo mine > /workspace/own && echo own-ok
    """
    marker, log = await run_job(box, "t0", script)
    assert marker["exit"] == 0
    assert "WROTE" not in log and "READ-CMD" not in log and log.count("refused") == 5 and "own-ok" in log


async def test_a_snapshot_restores_the_workspace_into_fresh_volumes(tmp_path: Path, volumes: VolumeFactory) -> None:
    """A snapshot restores the same files and owner into fresh volumes; a skipped snapshot keeps none and says why."""
    root = tmp_path / "sandboxes" / "vol" / "c1-s0"
    box = volumes(root, "reference/0")
    await box.prepare()
    await run_job(box, "t0", "mkdir -p src; echo 'print(1)' > src/main.py; echo data > notes.txt\n")
    snap = await box.snapshot()
    assert snap is not None and snap.size and not snap.skipped and Path(snap.path).is_file()
    await box.keep_code("t0000-a01-i00")
    kept = read_listing(root, "t0000-a01-i00")
    assert kept is not None and kept.files["src/main.py"].kept and kept.files["notes.txt"].kind == "text"
    assert read_text(root, kept.files["src/main.py"].sha) == "print(1)\n"
    assert (await box.snapshot(limit=1)).skipped  # type: ignore[union-attr]
    await box.keep_code("t0000-a02-i00")
    skipped = read_listing(root, "t0000-a02-i00")
    assert skipped is not None and skipped.skipped.startswith("the workspace archive is over")
    fresh = volumes(tmp_path / "sandboxes" / "vol" / "c1-s1", "reference/1")
    await fresh.prepare()
    await fresh.restore(Path(snap.path))
    _, log = await run_job(fresh, "t1", "cat src/main.py notes.txt; stat -c %u src/main.py; touch src/new && echo w\n")
    assert log.split() == ["print(1)", "data", "1000", "w"]


async def test_volumes_reaped_under_a_scenario_come_back_from_its_last_snapshot(
    tmp_path: Path, sandbox_image: str
) -> None:
    """Reaped volumes come back from the scenario's last snapshot, marked `restored`, not an empty workspace."""
    sandboxes = tmp_path / "sandboxes" / "vol"
    first = VolumeFactory(RunSettings(image=sandbox_image, workspace="volume"))
    try:
        box = first(sandboxes / "c1-s0", "reference/0")
        await box.prepare()
        assert not box.restored  # a new scenario: nothing to put back
        await run_job(box, "t0", "echo 'print(2)' > server.py\n")
        assert await box.snapshot() is not None
    finally:
        await first.aclose(sandboxes)  # containers and volumes gone; the snapshot stays in the state dir
    again = VolumeFactory(RunSettings(image=sandbox_image, workspace="volume"))
    try:
        box = again(sandboxes / "c1-s0", "reference/0")
        await box.prepare()
        assert box.restored
        _, log = await run_job(box, "t1", "cat server.py; stat -c %u server.py\n")
        assert log.split() == ["print(2)", "1000"]
        await box.close()
        await box.prepare()  # the same volumes again: nothing was lost, nothing put back
        assert not box.restored
    finally:
        await again.aclose(sandboxes)


async def test_the_reaper_removes_containers_and_volumes_by_label(tmp_path: Path, sandbox_image: str) -> None:
    """After aclose nothing labelled with the sweep's sandbox directory is left: no container, no volume."""
    factory = VolumeFactory(RunSettings(image=sandbox_image, workspace="volume"))
    sandboxes = tmp_path / "sandboxes" / "vol"
    try:
        box = factory(sandboxes / "c1-s0", "reference/0")
        await box.prepare()
    finally:
        await factory.aclose(sandboxes)
    label = f"staminabench.sandboxes={sandboxes.resolve()}"
    async with aiodocker.Docker() as client:
        assert await client.containers.list(all=True, filters={"label": [label]}) == []
        found = await client.volumes.list(filters={"label": [label]})
        assert not found.get("Volumes")


async def test_a_lost_container_is_recreated_on_the_same_volumes(tmp_path: Path, volumes: VolumeFactory) -> None:
    """Removing a scenario's container: `prepare` makes a new one on its volumes: workspace and markers kept."""
    box = volumes(tmp_path / "sandboxes" / "vol" / "c1-s0", "reference/0")
    await box.prepare()
    await run_job(box, "t0", "echo kept > /workspace/agent-code\n")
    async with aiodocker.Docker() as client:
        first = (await (await client.containers.get(box.name)).show())["Id"]
        await (await client.containers.get(box.name)).delete(force=True)
        await box.prepare()
        assert (await (await client.containers.get(box.name)).show())["Id"] != first
    state = await box.job_state("t0")
    assert state.marker is not None and state.marker["exit"] == 0
    _, log = await run_job(box, "t1", "cat /workspace/agent-code\n")
    assert log == "kept\n"


async def test_a_paused_container_is_waited_for_and_its_marker_read_after(
    tmp_path: Path, volumes: VolumeFactory
) -> None:
    """A marker wait on a paused container says "not yet"; unpaused, the marker is read through a new stream."""
    box = volumes(tmp_path / "sandboxes" / "vol" / "c1-s0", "reference/0")
    await box.prepare()
    await box.seed({"job.sh": "while [ ! -e /workspace/go ]; do sleep 0.1; done\n"})
    await box.launch("job", ["sh", "/workspace/job.sh"], {})
    async with aiodocker.Docker() as client:
        container = await client.containers.get(box.name)
        await container.pause()
        try:
            assert await box.wait_marker("job", 2, NO_WATCHER) is None
            loss = await box.health(0.0)
            assert loss is not None and loss.paused
        finally:
            await container.unpause()
    await box.seed({"go": ""})
    marker = await box.wait_marker("job", 60, NO_WATCHER)
    assert marker is not None and marker["exit"] == 0


class Crash(BaseException):
    """The daemon died here: nothing of it runs on (a BaseException, so no handler of the sandbox takes it)."""


class DyingDocker(aiodocker.Docker):
    """An engine client whose daemon dies once its `after`-th step has been done: a request that changes something
    on the engine (any but a GET) or a launcher request answered. Every request after that fails too."""

    def __init__(self, after: int | None) -> None:
        super().__init__()
        self.after, self.steps, self.dead = after, 0, False

    def step(self) -> None:
        self.steps += 1
        if self.steps == self.after:
            self.dead = True
        if self.dead:
            raise Crash

    async def _do_query(self, path: Any, method: str, **kwargs: Any) -> aiohttp.ClientResponse:
        if self.dead:
            raise Crash
        response = await super()._do_query(path, method, **kwargs)
        if method != "GET":
            try:
                self.step()
            except Crash:
                response.release()
                raise
        return response


def dying_box(client: DyingDocker, image: str, root: Path) -> VolumeSandbox:
    """A volume sandbox on `client` whose launcher requests count as its steps too."""
    box = VolumeFactory(RunSettings(image=image, workspace="volume"), connect=lambda: client)(root, "reference/0")
    call = box.stream.call

    async def counted(request: Request[A], timeout: float, check: Any) -> A:
        if client.dead:
            raise Crash
        found = await call(request, timeout, check)
        client.step()
        return found

    box.stream.call = counted  # type: ignore[method-assign]
    return box


async def test_a_prepare_cut_off_after_any_step_is_completed_by_the_next(tmp_path: Path, sandbox_image: str) -> None:
    """A prepare cut off after any step is completed by the next one, restoring the snapshot and saying so."""
    sandboxes = tmp_path / "sandboxes" / "vol"
    root = sandboxes / "c1-s0"
    (root / SNAPSHOT).parent.mkdir(parents=True)
    (root / SNAPSHOT).write_bytes(gzip.compress(tar_bytes([("server.py", b"print(3)\n", 1000, 0o644)])))
    run = RunSettings(image=sandbox_image, workspace="volume")
    whole = DyingDocker(None)
    try:
        await dying_box(whole, sandbox_image, root).prepare()
    finally:
        await whole.close()
    assert whole.steps >= 15  # volumes, container, seal, layer, launcher, owner, control, restore, stamp, home
    for after in range(1, whole.steps + 1):
        await VolumeFactory(run).aclose(sandboxes)  # the volumes reaped: the snapshot is all that is left
        client = DyingDocker(after)
        with pytest.raises(Crash):
            await dying_box(client, sandbox_image, root).prepare()
        await client.close()  # its connections go with it: the launcher reads the end of its stdin
        factory = VolumeFactory(run)
        try:
            box = factory(root, "reference/0")
            await box.prepare()
            assert box.restored, f"cut off after step {after}"
            _, log = await run_job(box, "t0", "cat server.py; stat -c '%u %U' server.py . .home; touch new\n")
            assert log.split() == ["print(3)", "1000", "agent", "1000", "agent", "1000", "agent"], after
        finally:
            await factory.aclose(sandboxes)


async def test_a_container_that_cannot_be_used_is_made_anew_by_prepare(tmp_path: Path, volumes: VolumeFactory) -> None:
    """A container under the sandbox's name that always fails is replaced within one prepare."""
    box = volumes(tmp_path / "sandboxes" / "vol" / "c1-s0", "reference/0")
    async with aiodocker.Docker() as client:
        config: dict[str, Any] = {"Image": box.image, "Cmd": ["sleep", "3600"], "Labels": box._labels()}
        config["HostConfig"] = {"NetworkMode": "none"}
        decoy = await client.containers.create(config=config, name=box.name)
        await decoy.start()
        await box.prepare()
        assert (await (await client.containers.get(box.name)).show())["Id"] != decoy.id
    _, log = await run_job(box, "t0", "id -u; stat -c %u /workspace\n")
    assert log.split() == ["1000", "1000"]


async def test_volumes_an_older_daemon_made_keep_their_workspace(tmp_path: Path, volumes: VolumeFactory) -> None:
    """Volumes from before stamps are stamped on prepare, but their workspace is never overwritten by a snapshot."""
    root = tmp_path / "sandboxes" / "vol" / "c1-s0"
    (root / SNAPSHOT).parent.mkdir(parents=True)
    (root / SNAPSHOT).write_bytes(gzip.compress(tar_bytes([("old.py", b"print(0)\n", 1000, 0o644)])))
    box = volumes(root, "reference/0")
    async with aiodocker.Docker() as client:
        for part in PARTS:
            await client.volumes.create({"Name": box.volume(part), "Labels": box._labels()})
    await box.prepare()
    assert not box.restored
    _, log = await run_job(box, "t0", "ls; stat -c %u .\n")
    assert log.split() == ["t0.sh", "1000"]
    await box.close()
    await box.prepare()  # stamped now: nothing to do again
    assert not box.restored
