"""The agent's server in a runtime's enclosure (`seam.Box`): started on an allocated port of the daemon's own
network, probed until it answers, judged, stopped with its whole enclosure.

Blame follows the local runtime's rules, judged by what the agent cannot shape: a server that fails to start is
the agent's (`NotReady`) unless a process outside its enclosure (`Box.holds`: the pid namespace, never an
environment tag or a process group the agent could change) holds a socket on the port, which makes it the
platform's `port_taken`, retried on a fresh port without touching R. A server that answers while a process outside
its enclosure listens on the port too is the same. Nothing the server starts can outlive it: its enclosure ends
with it, so a detached child needs no rule of its own.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import time
from pathlib import Path

import anyio

from staminad.sandbox.base import HostView, NotReady, SandboxError, ServerHandle
from staminad.sandbox.hostprocs import kill_group, listening_inodes, sockets_on
from staminad.sandbox.hostspawn import LIMITS
from staminad.sandbox.ports import PortAllocator, port_is_free
from staminad.sandbox.readiness import wait_ready
from staminad.sandbox.seam import Box
from staminad.suite.niceness import in_new_session, lowered
from staminad.suite.pool import run_sync as offload

SERVER_RECORD = "server.box"  # in the control directory: the running server's enclosure
PORT_FREE_TIMEOUT = 5.0  # seconds for the kernel to let go of a stopped server's port
ENCLOSE_TIMEOUT = 30.0  # seconds for an enclosure to be set up and run its first command
EXIT_TIMEOUT = 10.0  # seconds for the server's host-side process to end once its enclosure is gone


def holders(port: int, links: set[str]) -> dict[str, int]:
    """Socket link (`socket:[inode]`) -> pid of a host process holding it, for the sockets in `links`."""
    found: dict[str, int] = {}
    for proc in Path("/proc").iterdir() if links else ():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in proc.joinpath("fd").iterdir():
                with contextlib.suppress(OSError):
                    if (link := os.readlink(fd)) in links:
                        found[link] = int(proc.name)
    return found


class BoxServer:
    """The server of one sandbox: its port, its enclosure's record, its host-side process."""

    def __init__(self, box: Box, view: HostView, ports: PortAllocator) -> None:
        self.box = box
        self.view = view
        self.ports = ports
        self.record = view.control / SERVER_RECORD
        self._proc: subprocess.Popen[bytes] | None = None

    async def end_left(self) -> None:
        """End a server enclosure that is still recorded (a daemon killed mid-suite left it running)."""
        await offload(self.box.end, self.record)

    def outsider(self, port: int, listening_only: bool, connected: bool) -> SandboxError | None:
        """The platform's `port_taken` when a process outside the server's enclosure holds a socket on `port`
        (`listening_only`: only listeners count); None when nothing outside explains what was seen."""
        sockets = sockets_on(port)
        live = {f"socket:[{s.inode}]": s for s in sockets if s.inode != "0" and (s.state == "0A" or not listening_only)}
        for link, pid in holders(port, set(live)).items():
            if not self.box.holds(self.record, pid):
                return SandboxError(
                    f"port {port} is held ({live[link].says()}) by process {pid} outside this sandbox, so the "
                    "server could not serve it alone",
                    "port_taken",
                )
        left = [s for s in sockets if s.inode == "0"]
        if left and not connected and not listening_only:
            return SandboxError(
                f"port {port} is held by a connection no process of this sandbox made ({left[0].says()}), so the "
                "server could not bind it",
                "port_taken",
            )
        return None

    async def start(self, timeout: float, request_timeout: float) -> ServerHandle:
        """Start `bash run_server.sh PORT` in an enclosure of its own and wait until it answers GET /."""
        await self.end_left()
        port = await offload(self.ports.allocate)
        proc, started = await anyio.to_thread.run_sync(self._spawn, port)
        handle = ServerHandle(url=f"http://127.0.0.1:{port}", pgid=proc.pid, port=port)

        async def running() -> bool:
            return proc.poll() is None

        async def listening() -> bool:
            return bool(await offload(listening_inodes, port))

        try:
            if not await anyio.to_thread.run_sync(_began, started, min(timeout, ENCLOSE_TIMEOUT)):
                raise SandboxError(
                    "the server's enclosure was not set up (its command never began): the runtime failed, "
                    "before any code of the agent's ran",
                    "engine_error",
                )
            try:
                await wait_ready(handle.url, timeout, running, request_timeout, listening)
            except NotReady as exc:  # the agent's failure, unless a program outside held the port
                blame = await offload(self.outsider, port, False, exc.connected)
                if blame is None:
                    raise
                raise blame from None
            if (blame := await offload(self.outsider, port, True, True)) is not None:
                raise blame
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.stop(handle)
            raise
        return handle

    def _spawn(self, port: int) -> tuple[subprocess.Popen[bytes], int]:
        """The server's host-side process, and the read end of a pipe on which its enclosure's first command,
        ours, writes one byte before it runs `run_server.sh` (`_began`)."""
        read, write = os.pipe2(os.O_CLOEXEC)
        try:
            return self._popen(port, write), read
        except BaseException:
            os.close(read)
            raise
        finally:
            os.close(write)

    def _popen(self, port: int, began: int) -> subprocess.Popen[bytes]:
        env = {"HOME": f"{self.box.paths.workspace}/.home"}
        first = f'printf x >&{began} && exec {began}>&- && exec "$@"'  # bash: a descriptor above 9 is fine
        argv = self.box.enclose(["bash", "-c", first, "bash", "bash", "run_server.sh", str(port)], env, self.record)
        log = open(self.view.control / "server.log", "wb")  # noqa: SIM115 - handed to the child, closed below
        try:
            self._proc = subprocess.Popen(
                [*LIMITS, *lowered(in_new_session(argv))],  # below the daemon
                cwd=self.view.workspace,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={"PATH": "/usr/local/bin:/usr/bin:/bin"},
                pass_fds=(began,),
            )
        except OSError:
            self.ports.release(port)
            raise
        finally:
            log.close()
        return self._proc

    async def stop(self, handle: ServerHandle) -> None:
        """End the server's enclosure (everything in it at once), its host-side group, and wait until its port
        is free (bounded)."""
        proc, self._proc = self._proc, None
        await offload(self.box.end, self.record)
        if handle.pgid is not None:
            kill_group(handle.pgid)
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                await anyio.to_thread.run_sync(proc.wait, EXIT_TIMEOUT)
        await anyio.to_thread.run_sync(_let_go, handle.port)
        self.ports.release(handle.port)


def _began(fd: int, timeout: float) -> bool:
    """Whether the enclosure's first command wrote its byte within `timeout` (the read end is closed here).

    Proof the agent cannot shape either way: no code of the agent's runs before the byte, and the enclosure's
    setup failing (the runtime's fault) closes the pipe without one."""
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        return bool(ready) and os.read(fd, 1) == b"x"
    finally:
        os.close(fd)


def _let_go(port: int, limit: float = PORT_FREE_TIMEOUT) -> None:
    """The stopped server's port free (a socket in the kernel's hands), within `limit`."""
    deadline = time.monotonic() + limit
    while port and not port_is_free(port) and time.monotonic() < deadline:
        time.sleep(0.01)  # the kernel releases the port; there is nothing to wait on instead
