"""The engine-facing behaviours every runtime on this machine gives alike: the same calls, run on `local` and on
`bwrap` (the composed runtime over the narrow seam), must do the same thing."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import httpx
import pytest

from staminad.agents.base import adapter_for
from staminad.sandbox.base import Grant, NotReady, Sandbox, SandboxFactory
from staminad.sandbox.bwrap.box import BwrapFactory
from staminad.sandbox.local import local_factory
from staminad.sandbox.markers import MarkerWatcher
from staminad.sandbox.ports import PortAllocator

pytestmark = pytest.mark.anyio

SERVER = 'exec python3 -m http.server --bind 127.0.0.1 "$1"\n'
FACTORIES: dict[str, Callable[[PortAllocator], SandboxFactory]] = {"local": local_factory, "bwrap": BwrapFactory}
LOW = {"local": 31500, "bwrap": 31520}  # each runtime's own ports, so the two never meet in a parallel run
RUNTIMES = ["local", pytest.param("bwrap", marks=pytest.mark.bwrap)]


async def _sandbox(tmp: Path, runtime: str) -> Sandbox:
    ports = PortAllocator(LOW[runtime], LOW[runtime] + 9, lock_dir=tmp / "locks")
    box = FACTORIES[runtime](ports)(tmp / "box", "contract", Grant(layer=adapter_for("reference").layer()))
    await box.prepare()
    return box


async def _until(check: Callable[[], Awaitable[bool]], timeout: float = 10.0) -> None:
    """Bounded: returns once `check()` holds (a process of the sandbox's own ending), else fails."""
    with anyio.fail_after(timeout):
        while not await check():  # noqa: ASYNC110 - another process ending sets no Event here
            await anyio.sleep(0.01)


def _ready(fifo: Path) -> str:
    """The first line a job writes into `fifo` (opened blocking: returns once the job is running)."""
    with fifo.open() as f:
        return f.readline()


@pytest.mark.parametrize("runtime", RUNTIMES)
async def test_a_job_runs_in_the_workspace_and_leaves_its_marker(
    tmp_path: Path, runtime: str, watcher: MarkerWatcher
) -> None:
    """Seeded files, the prompt and the adapter's environment reach the job; its marker says how it ended."""
    sb = await _sandbox(tmp_path, runtime)
    await sb.seed({"a.py": "print(1)\n", "run_server.sh": SERVER})
    prompt = await sb.put_prompt("j1", "the prompt")
    await sb.launch("j1", ["sh", "-c", f'cat {prompt} a.py > seen; echo "$WHO" >> seen; exit 3'], {"WHO": "agent"})
    marker = await sb.wait_marker("j1", 30, watcher)
    assert marker is not None and marker["exit"] == 3
    state = await sb.job_state("j1")
    assert state.written and state.started and state.marker is not None
    host = sb.host_files
    assert host is not None and (host.workspace / "seen").read_text() == "the promptprint(1)\nagent\n"
    assert await sb.count_loc() == 2  # a.py and run_server.sh, one line each

    async def ended() -> bool:
        return not await sb.job_alive("j1")

    await _until(ended)  # the wrapper goes once its marker is written
    await sb.close()


@pytest.mark.parametrize("runtime", RUNTIMES)
async def test_kill_job_ends_a_running_harness(tmp_path: Path, runtime: str) -> None:
    """A harness that would run for minutes is alive until kill_job, then gone; no marker is written for it."""
    sb = await _sandbox(tmp_path, runtime)
    host = sb.host_files
    assert host is not None
    os.mkfifo(host.workspace / "ready")
    await sb.launch("j1", ["sh", "-c", "echo up > ready; exec sleep 600"], {})
    with anyio.fail_after(30):
        assert await anyio.to_thread.run_sync(_ready, host.workspace / "ready") == "up\n"
    assert await sb.job_alive("j1")
    await sb.kill_job("j1")

    async def gone() -> bool:
        return not await sb.job_alive("j1")

    await _until(gone)
    assert (await sb.job_state("j1")).marker is None
    assert await sb.health(0.0) is None
    await sb.close()


@pytest.mark.parametrize("runtime", RUNTIMES)
async def test_a_server_starts_answers_logs_and_stops(tmp_path: Path, runtime: str) -> None:
    """start_server waits until GET / answers; the log holds its output; stop frees the port for the next start."""
    sb = await _sandbox(tmp_path, runtime)
    await sb.seed({"run_server.sh": SERVER, "index.html": "hello\n"})
    handle = await sb.start_server(timeout=30)
    async with httpx.AsyncClient() as client:
        assert (await client.get(f"{handle.url}/index.html")).text == "hello\n"
    await sb.stop_server(handle)
    assert "GET /index.html" in await sb.server_log(4096)
    with pytest.raises(httpx.ConnectError):
        async with httpx.AsyncClient() as client:
            await client.get(handle.url)
    again = await sb.start_server(timeout=30)
    await sb.stop_server(again)
    await sb.close()


@pytest.mark.parametrize("runtime", RUNTIMES)
async def test_a_server_that_exits_is_the_agents_failure(tmp_path: Path, runtime: str) -> None:
    """`run_server.sh` that exits without serving is NotReady(server_exited), never a platform fault."""
    sb = await _sandbox(tmp_path, runtime)
    await sb.seed({"run_server.sh": "echo no server here; exit 1\n"})
    with pytest.raises(NotReady) as info:
        await sb.start_server(timeout=30)
    assert info.value.kind == "server_exited"
    assert "no server here" in await sb.server_log(4096)
    await sb.close()


@pytest.mark.parametrize("runtime", RUNTIMES)
async def test_the_sandbox_stays_healthy_after_the_agent_kills_what_it_can(
    tmp_path: Path, runtime: str, watcher: MarkerWatcher
) -> None:
    """A harness that kills the processes it started (and leaves one running) leaves a healthy sandbox that serves."""
    sb = await _sandbox(tmp_path, runtime)
    await sb.seed({"run_server.sh": SERVER})
    kills = "sleep 600 & a=$!; sleep 600 & kill -KILL $a $!; (sleep 600 &); exit 0"
    await sb.launch("j1", ["sh", "-c", kills], {})
    marker = await sb.wait_marker("j1", 30, watcher)
    assert marker is not None and marker["exit"] == 0
    assert await sb.health(0.0) is None
    handle = await sb.start_server(timeout=30)
    await sb.stop_server(handle)
    await sb.close()
