"""The `local` runtime: a workspace directory on the host, processes in their own sessions.

The embedded default when no Docker engine is reachable. Harness and server run as separate
process groups with resource limits; each is stopped by process-group id, never by name. Neither
inherits the daemon's environment: they get `base_env()` (an allow-list: PATH, locale, time zone)
plus what the adapter declares (for a real harness, the gateway URL with its per-scenario token),
so an API key in the daemon's environment never reaches the agent. What this runtime does not
isolate (same user, file system, network and pid space as the daemon) is listed in the README.

A server that fails to start is the agent's failure unless the port says otherwise (`hostprocs.port_blame`):
held by another program, it is the platform's `port_taken`, retried on a fresh port without touching R.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from pathlib import Path

import anyio

from staminad.sandbox.base import (
    WRAPPER,
    Grant,
    Loss,
    NotReady,
    Sandbox,
    SandboxError,
    SandboxFactory,
    SandboxPaths,
    ServerHandle,
    marker_path,
    write_job,
)
from staminad.sandbox.bounded import read_int
from staminad.sandbox.hostfiles import HostFiles
from staminad.sandbox.hostprocs import (
    group_alive,
    kill_group,
    kill_tagged,
    listener_holders,
    listening_inodes,
    port_blame,
)
from staminad.sandbox.hostspawn import LIMITS, base_env, run_briefly
from staminad.sandbox.hostspawn import PASSED_ENV as PASSED_ENV  # re-exported: where the tests read the allow-list
from staminad.sandbox.offloop import quick
from staminad.sandbox.ports import PortAllocator, port_is_free
from staminad.sandbox.readiness import wait_ready
from staminad.suite.niceness import NICE_ENV, RAISED_ENV, child_nice, in_new_session, lowered, raised
from staminad.suite.pool import run_sync as offload

HARNESS_DIR = Path(__file__).parents[1]  # staminad/: the reference agent and fault scripts live below it

SERVER_TAG = "STAMINABENCH_SERVER_OF"
AGENT_TAG = "STAMINABENCH_AGENT_OF"  # in a harness's environment: what it leaves running is ended with its phase


def _kill_left(pid_file: Path) -> None:
    """Kill the server group a daemon killed mid-suite left (its pgid file says which)."""
    left = read_int(pid_file)
    if left is not None:
        kill_group(left)


def _let_go(pid_file: Path, port: int, limit: float = 5.0) -> None:
    """The stopped server's pgid file gone, and its port free (a socket in the kernel's hands), within `limit`."""
    pid_file.unlink(missing_ok=True)
    deadline = time.monotonic() + limit
    while not port_is_free(port) and time.monotonic() < deadline:
        time.sleep(0.01)  # the kernel releases the port; there is nothing to wait on instead


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout)


class LocalSandbox(HostFiles):
    def __init__(self, root: Path, ports: PortAllocator) -> None:
        self.root = root
        self.host_workspace = root / "workspace"
        self.host_control = root / "control"
        self.paths = SandboxPaths(str(self.host_workspace), str(self.host_control), str(HARNESS_DIR))
        self.llm_host = "127.0.0.1"
        self.ports = ports
        self._server: subprocess.Popen[bytes] | None = None

    def describe(self) -> dict[str, str]:
        return {"runtime": "local", "root": str(self.root)}

    def watch(self) -> None:
        """Processes on this machine: no engine to wait for."""
        return

    async def prepare(self) -> None:
        await quick(self._make_dirs)  # file operations stay off the loop every scenario shares
        # A server never has to outlive the daemon that started it (harnesses do): kill any left by a daemon
        # killed mid-test, found by the tag in their environment, even if it died before recording the pgid.
        await offload(kill_tagged, self._tag())

    def _make_dirs(self) -> None:
        self.host_workspace.mkdir(parents=True, exist_ok=True)
        (self.host_control / "markers").mkdir(parents=True, exist_ok=True)

    def _tag(self) -> str:
        return f"{SERVER_TAG}={self.root}"

    def _agent_tag(self) -> str:
        return f"{AGENT_TAG}={self.root}"

    async def launch(self, job_id: str, argv: list[str], env: dict[str, str]) -> None:
        # Written and forked from a worker thread: a fork (and asyncio's watcher thread per child) held the event loop.
        await anyio.to_thread.run_sync(self._launch, job_id, argv, env)

    def _launch(self, job_id: str, argv: list[str], env: dict[str, str]) -> None:
        job = write_job(self.host_control, self.paths, job_id, argv, env)
        # setsid -f: the wrapper runs in a new session, not as our child, so it outlives a daemon restart.
        argv_ = [*LIMITS, "setsid", "-f", "sh", str(WRAPPER), str(job), str(marker_path(self.host_control, job_id))]
        # The wrapper runs the harness below the daemon's priority, and itself (its marker) at it.
        env = {**base_env(), AGENT_TAG: str(self.root), NICE_ENV: str(child_nice()), RAISED_ENV: str(raised())}
        run_briefly(argv_, env)

    def _pid(self, job_id: str) -> int | None:
        return read_int(self.host_control / "jobs" / job_id / "pid")

    async def job_alive(self, job_id: str) -> bool:
        # Polled every few seconds per scenario: a read and a signal on the loop cost less than a thread's hop.
        return group_alive(self._pid(job_id))

    async def kill_job(self, job_id: str) -> None:
        await quick(self._kill_job, job_id)

    def _kill_job(self, job_id: str) -> None:
        pid = self._pid(job_id)
        if pid is not None:
            kill_group(pid)

    async def frozen(self, since: float) -> str:
        """Local processes have no engine to pause them."""
        return ""

    async def health(self, since: float) -> Loss | None:
        """Local processes have no container to lose; only the sandbox directory itself can go."""
        if not self.host_workspace.is_dir():  # polled: one stat costs less than a hop
            return Loss(kind="sandbox_lost", detail=f"the workspace {self.host_workspace} is gone")
        return None

    async def start_server(self, timeout: float, request_timeout: float = 5.0) -> ServerHandle:
        pid_file = self.host_control / "server.pgid"
        await quick(_kill_left, pid_file)
        # Nothing the harness left running (a server it tried, a detached writer) outlives its phase: whatever kept
        # the harness's tag goes (locally the agent is the daemon's user, so this is tidiness, not a seal).
        await offload(kill_tagged, self._agent_tag())
        port = await quick(self.ports.allocate)  # reads /proc, takes lock files: off the loop
        # Forked from a worker thread, not the event loop's; it records the server itself (and its pgid file), so a
        # cancel arriving as the thread returns still finds it to stop.
        server = await anyio.to_thread.run_sync(self._spawn_server, port, pid_file)
        handle = ServerHandle(url=f"http://127.0.0.1:{port}", pgid=server.pid, port=port)

        async def running() -> bool:
            return server.poll() is None

        async def listening() -> bool:
            return bool(await offload(listening_inodes, port))

        try:
            try:
                await wait_ready(handle.url, timeout, running, request_timeout, listening)
            except NotReady as exc:  # the agent's failure, unless another program held the port
                blame = await offload(port_blame, port, self._tag(), handle.pgid, exc.connected)
                if blame is None:
                    raise
                raise blame from None
            holders = await offload(listener_holders, port, self._tag())
            if holders == []:
                raise SandboxError(
                    f"port {port} is answered by a program outside this sandbox (the server could not bind it)",
                    "port_taken",
                )
            strangers = [pid for pid, pgid in holders or [] if pgid != handle.pgid]
            if strangers:
                raise NotReady(
                    "server_left_running",
                    f"port {port} is held by process {strangers[0]} outside the process group that "
                    "`bash run_server.sh` runs in (it was detached, e.g. with setsid or a daemon fork), "
                    "so it would be left running after the tests. Keep the server in run_server.sh's "
                    "process group.",
                )
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.stop_server(handle)
            raise
        return handle

    def _spawn_server(self, port: int, pid_file: Path) -> subprocess.Popen[bytes]:
        log = open(self.host_control / "server.log", "wb")  # noqa: SIM115 - handed to the child, closed below
        try:
            self._server = subprocess.Popen(
                [*LIMITS, *lowered(in_new_session(["bash", "run_server.sh", str(port)]))],  # below the daemon
                cwd=self.host_workspace,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**base_env(), "HOME": str(self.host_workspace / ".home"), SERVER_TAG: str(self.root)},
            )
        except OSError:
            self.ports.release(port)
            raise
        finally:
            log.close()
        pid_file.write_text(str(self._server.pid))
        return self._server

    async def stop_server(self, handle: ServerHandle) -> None:
        """Stop the server's whole process group (TERM, then KILL), then any process it detached (found by
        the sandbox's tag in its environment, or in the server's session); wait until its port is free."""
        server, self._server = self._server, None
        if handle.pgid is not None:
            kill_group(handle.pgid, signal.SIGTERM)
            if server is not None:
                await anyio.to_thread.run_sync(_wait, server, 5.0)
            kill_group(handle.pgid, signal.SIGKILL)
        if server is not None:
            await anyio.to_thread.run_sync(_wait, server, 10.0)
        await offload(kill_tagged, self._tag(), handle.pgid)
        await anyio.to_thread.run_sync(_let_go, self.host_control / "server.pgid", handle.port)
        self.ports.release(handle.port)

    async def close(self) -> None:
        """Kill any harness job still running; the workspace stays for inspection and resume."""
        jobs = self.host_control / "jobs"
        if jobs.exists():
            for job in jobs.iterdir():
                await self.kill_job(job.name)


def local_factory(ports: PortAllocator) -> SandboxFactory:
    return LocalFactory(ports)


class LocalFactory:
    """Sandboxes as local processes: nothing to clean up per sweep, and the gateway is reached on 127.0.0.1."""

    def __init__(self, ports: PortAllocator) -> None:
        self.ports = ports

    def __call__(self, root: Path, label: str, grant: Grant = Grant()) -> Sandbox:  # noqa: B008 - frozen, shared
        return LocalSandbox(root, self.ports)

    async def llm_hosts(self) -> list[str]:
        return []

    def llm_serving(self, port: int) -> None:
        pass

    async def aclose(self, sandboxes: Path) -> None:
        pass
