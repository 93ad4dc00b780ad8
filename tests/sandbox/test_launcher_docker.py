"""The in-container launcher on a real container: it survives the daemon, nothing runs twice, and without it every
operation still works by `docker exec` while a new launcher is started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import aiodocker
import anyio
import pytest

from staminad.engine.config import RunSettings
from staminad.engine.markers import MarkerWatcher
from staminad.sandbox.base import marker_path
from staminad.sandbox.bounded import read_int
from staminad.sandbox.docker.bindsandbox import DockerSandbox, reap
from staminad.sandbox.docker.requests import IsAlive
from staminad.sandbox.ports import PortAllocator

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

# A daemon that prepares the sandbox, launches a job and is then killed -9 (by the test) while the job runs.
DAEMON = """
import anyio, aiodocker, sys
from pathlib import Path
from staminad.engine.config import RunSettings
from staminad.sandbox.ports import PortAllocator
from staminad.sandbox.docker.bindsandbox import DockerSandbox

async def main():
    docker = aiodocker.Docker()
    box = DockerSandbox(docker, Path(sys.argv[1]), "resume", "x", RunSettings(image=sys.argv[2]), PortAllocator())
    await box.prepare()
    job = "echo ran >> /workspace/runs; while [ ! -e /workspace/go ]; do sleep 0.1; done"
    await box.launch("job", ["sh", "-c", job], {})
    print("launched", flush=True)
    await anyio.sleep(3600)

anyio.run(main)
"""


async def test_a_restarted_daemon_finds_the_running_harness_and_nothing_runs_twice(
    tmp_path: Path, sandbox_image: str, watcher: MarkerWatcher
) -> None:
    """A daemon restarted mid-turn adopts the container and its launcher; the job ran once, one launcher."""
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
    launcher = read_int(root.resolve() / "control" / "launcher.pid")
    async with aiodocker.Docker() as docker:
        box = DockerSandbox(docker, root, "resume", "x", RunSettings(image=sandbox_image), PortAllocator())
        try:
            await box.prepare()  # adopts the running container
            assert read_int(box.host_control / "launcher.pid") == launcher and box.channel.reading()
            assert await box.job_alive("job")
            (box.host_workspace / "go").write_text("")
            marker = await watcher.wait(marker_path(box.host_control, "job"), 60)
            assert marker is not None and marker["exit"] == 0
            assert (box.host_workspace / "runs").read_text() == "ran\n"
        finally:
            await reap(docker, root.parent.resolve())


async def test_without_its_launcher_a_sandbox_works_by_exec_and_starts_a_new_one(
    tmp_path: Path, sandbox_image: str, watcher: MarkerWatcher
) -> None:
    """The launcher killed: the next operations run by `docker exec`, and a new launcher reads the FIFO after."""
    async with aiodocker.Docker() as docker:
        box = DockerSandbox(
            docker,
            tmp_path / "sandboxes" / "gone" / "c1-s0",
            "gone",
            "x",
            RunSettings(image=sandbox_image),
            PortAllocator(),
        )
        try:
            await box.prepare()
            first = read_int(box.host_control / "launcher.pid")
            assert first is not None and box.channel.reading()
            # Waited for until it has closed its files (gone, or a zombie): `kill` returns at the signal, and the
            # FIFO's read end closes only as the process exits (bounded by `timeout`).
            stat = f"/proc/{first}/stat"
            gone = f'kill -KILL {first}; until [ ! -e {stat} ] || [ "$(cut -d" " -f3 {stat})" = Z ]; do sleep 0.01; '
            gone += "done"
            assert await box._exec(["timeout", "20", "sh", "-c", gone]) == 0
            assert not box.channel.reading()
            await box.launch("job", ["sh", "-c", "exit 3"], {})  # by exec; a new launcher is started
            marker = await watcher.wait(marker_path(box.host_control, "job"), 60)
            assert marker is not None and marker["exit"] == 3
            with anyio.fail_after(30):
                while not box.channel.reading():  # noqa: ASYNC110 - a FIFO reader gives no event to await
                    await anyio.sleep(0.05)  # the new launcher opens the FIFO on its own time
            assert read_int(box.host_control / "launcher.pid") != first
            assert (await box._op(IsAlive(pgid=1))).alive  # answered by the new launcher
            assert (await box._listeners(0)).sockets == 0
        finally:
            await reap(docker, box.root.parent)
