"""The engine on volume sandboxes (`[run] workspace = "volume"`): the same results as bind mounts, snapshots and
logs back on the daemon's disk, and a daemon killed -9 mid-harness whose successor runs nothing twice."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import aiodocker
import anyio
import pytest

from staminad.engine.config import RunSettings, load_sweep
from staminad.sandbox.docker import LABEL_SANDBOXES, docker_factory, reap
from staminad.sandbox.markers import MarkerWatcher
from staminad.sandbox.ports import PortAllocator
from staminad.sandbox.volume import VolumeFactory, reap_volumes, volume_factory
from tests.engine.conftest import sweep, write_sweep

pytestmark = pytest.mark.anyio

NO_WATCHER = MarkerWatcher()  # volume sandboxes never use the daemon's inotify watcher

# A daemon that prepares a volume sandbox, launches a job and is then killed -9 (by the test) while the job runs.
DAEMON = """
import anyio, sys
from pathlib import Path
from staminad.engine.config import RunSettings
from staminad.sandbox.volume import VolumeFactory

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
    """Reference and a mutant give the same turns on volumes as on bind mounts; every tested attempt has a
    snapshot; the logs are mirrored; no container or volume is left."""
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
        assert not (await client.volumes.list(filters={"label": [label]})).get("Volumes")  # type: ignore[no-untyped-call]


async def test_a_restarted_daemon_finds_the_running_harness_on_volumes_and_nothing_runs_twice(
    tmp_path: Path, sandbox_image: str
) -> None:
    """kill -9 of the daemon mid-harness: the next one adopts the container, sees the job started and alive
    through a new launcher stream, and reads its marker; the job ran once."""
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
