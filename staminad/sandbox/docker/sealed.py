"""The sealed container every Docker sandbox is: its jobs and server, reached through its launcher.

`bindsandbox.DockerSandbox` (files bind-mounted from the daemon's disk) and `volumesandbox.VolumeSandbox` (files
in the engine's volumes) differ only in how files reach the container and how its launcher is
reached; both build on `SealedContainer`, which holds what is the same in both: what the engine sees
(`engineside.EngineContainer`: limits, seal, health), a job's liveness and kill, the agent's processes
ended at each phase's end, and the server's start and stop with the check that whatever answers is the
server just started.

Blame at the server's start needs proof: the agent's processes run beside every step of it (they are
ended first, then the server's own run), so a step that fails inside the container (`InsideFailure`:
the launcher late or out of processes or memory, the start command not run) is the agent's
`server_exhausted`, unless the engine's own record shows the container lost or paused from outside,
or the engine itself does not answer (`_judged`).
"""

from __future__ import annotations

import contextlib
import time

import anyio

from staminad.sandbox.base import SERVER_PORT_IN_CONTAINER, InsideFailure, NotReady, SandboxError, ServerHandle
from staminad.sandbox.docker.container import CONTROL, HEALTH_INTERVAL, OP_TIMEOUT, PID_TIMEOUT, _agent, agent_ids
from staminad.sandbox.docker.engineconnect import client_watch
from staminad.sandbox.docker.engineside import EngineContainer
from staminad.sandbox.docker.replies import A, Holder, Listeners
from staminad.sandbox.docker.requests import (
    EndAgent,
    FindListeners,
    IsAlive,
    Kill,
    MeasureUsage,
    Request,
    Spawn,
    StopServer,
)
from staminad.sandbox.outage import EngineWatch
from staminad.sandbox.readiness import wait_ready

SERVER_LOG_LIMIT = 1 << 20  # bytes of the server's output its log keeps (the newest; see logcap.py)
HARNESS_LOG_LIMIT = 4 << 20  # bytes of a harness's output its job log keeps


def _holder(holder: Holder) -> str:
    return f"process {holder.pid} (`{' '.join(holder.cmd.split())[:120]}`)"


def _left_running(holder: Holder | None, leader_start: int | None) -> str:
    """Feedback for a port held outside the new server's process group (`holder` None: by a hidden process)."""
    if holder is None:
        return (
            f"port {SERVER_PORT_IN_CONTAINER} is held by a process that cannot be inspected (it made itself "
            "non-dumpable) and is not in the process group that `bash run_server.sh` runs in, so the new "
            "server could not be told apart from it. Stop every server you start before you finish."
        )
    who = _holder(holder)
    if leader_start is not None and holder.start < leader_start:
        return (
            f"port {SERVER_PORT_IN_CONTAINER} is held by {who}, which was started before this server start: "
            "a server left running by an earlier turn or by the harness, so the new server could not bind "
            "the port. Stop every server you start before you finish."
        )
    return (
        f"port {SERVER_PORT_IN_CONTAINER} is held by {who} outside the process group that "
        "`bash run_server.sh` runs in (it was detached, e.g. with setsid or a daemon fork), so it would be "
        "left running after the tests. Keep the server in run_server.sh's process group."
    )


class SealedContainer(EngineContainer):
    """One scenario's labelled, sealed container on an engine (see the module docstring)."""

    def watch(self) -> EngineWatch:
        """The outage watch of its engine (`staminad.sandbox.outage`)."""
        return client_watch(self.docker)

    # --- what each way of reaching the container's files provides ----------------------------------

    async def _op(self, request: Request[A], timeout: float = OP_TIMEOUT) -> A:
        """One root-side operation of the container's launcher (see `launcher`), its answer decoded as the Struct
        the request's type names (see `requests`)."""
        raise NotImplementedError

    async def _pid(self, job_id: str) -> int | None:
        raise NotImplementedError

    async def _server_pgid(self) -> int | None:
        raise NotImplementedError

    async def _server_exited(self) -> bool:
        raise NotImplementedError

    async def _clear_server_files(self) -> None:
        raise NotImplementedError

    def _server_url(self, port: int) -> str:
        return f"http://127.0.0.1:{port}"

    async def _server_base(self) -> str:
        """Where the suite reaches the server: its published port, unless a runtime knows a shorter way."""
        assert self.port is not None
        return self._server_url(self.port)

    async def job_alive(self, job_id: str) -> bool:
        pid = await self._pid(job_id)
        if pid is None:
            return False
        try:
            return (await self._op(IsAlive(pgid=pid))).alive
        except SandboxError:
            if await self._container() is None:
                return False  # the container is gone, and the job with it
            raise  # paused, or the engine failing: not the job's doing

    async def kill_job(self, job_id: str) -> None:
        pid = await self._pid(job_id)
        if pid is not None and await self._container() is not None:
            await self._op(Kill(pgid=pid))

    async def _listeners(self, leader: int) -> Listeners:
        """What holds the server port inside the container, read with the agent's ids by the launcher itself, which
        forks nothing for it and which the agent's processes cannot signal (see `launcher`)."""
        return await self._op(FindListeners(port=SERVER_PORT_IN_CONTAINER, leader=leader, as_=_agent()))

    async def end_agent(self) -> int:
        """End every process of the agent's user in the container (see `pgroups.end_user`): how many were ended.

        Run at the end of each phase, so nothing of the agent outlives it: whatever the harness left (a server
        it tried, a detached pid filler, memory hog, fork chain or disk writer) is gone before the server starts,
        and whatever the server left before the next harness call. The launcher proves none is left; any still
        alive at its bound make this a NotReady (`server_exhausted`): the agent's doing, never the platform's.
        """
        uid = agent_ids()[0]
        if uid == 0:
            return 0
        found = await self._op(EndAgent(uid=uid))
        if found.left:
            raise NotReady(
                "server_exhausted",
                f"{found.left} of the sandbox's own processes (of {found.ended} ended) were still running when they "
                "had been killed for 10 s, so the server could not be started on a sandbox of its own. Leave nothing "
                "running when you finish.",
            )
        return found.ended

    async def _over_quota(self) -> str:
        """Why the workspace is over its quota now that nothing of the agent runs ("" when it is not): a writer the
        harness detached from the wrapper's watchdog does not get to keep what it wrote past the quota."""
        used = (await self._op(MeasureUsage(path=self.paths.workspace, as_=_agent()))).kb
        if used > self.quota_kb:
            return (
                f"the workspace holds {used / 1024 / 1024:.1f} GiB, over its quota of "
                f"{self.quota_kb / 1024 / 1024:.1f} GiB: delete what the server does not need"
            )
        return ""

    async def _judged(self, exc: SandboxError) -> NotReady | SandboxError:
        """An operation of the server start that failed: the platform's only on the engine's own record (the
        container lost or paused from outside, the engine not answering, the engine refusing an operation); the
        agent's (`server_exhausted`) when its processes hold the container's limits, or when the failure was
        inside the container (`InsideFailure`), where they run beside every step of the start."""
        if exc.kind != "engine_error":
            return exc
        loss = await self.health(time.time() - OP_TIMEOUT)
        if loss is not None:
            return SandboxError(loss.detail, loss.kind)
        why = await self.exhausted()
        if why:
            return NotReady("server_exhausted", f"{why}, so the server could not be started or checked")
        if isinstance(exc, InsideFailure):
            return NotReady(
                "server_exhausted",
                f"the sandbox could not start or check the server ({exc}); nothing outside the sandbox stopped it, "
                "and the sandbox's processes, memory and CPU are shared with the server's own processes",
            )
        return exc

    async def start_server(self, timeout: float, request_timeout: float = 5.0) -> ServerHandle:
        """Start `bash run_server.sh` in its own process group and wait until it answers.

        Every process the harness left is ended first (`end_agent`). The port inside is fixed, so whatever
        answers there is checked to be the server just started: every process holding the listening socket
        must be in the new server's process group. A child the server detached holding the port is the agent's
        failure, `server_left_running`; a server that exhausts its sandbox's limits, `server_exhausted`.
        """
        try:
            return await self._start_server(timeout, request_timeout)
        except SandboxError as exc:
            raise await self._judged(exc) from None

    async def _start_server(self, timeout: float, request_timeout: float) -> ServerHandle:
        if await self._server_pgid() is not None:  # left running by a daemon killed mid-suite
            await self.stop_server(ServerHandle(url="", port=self.port or 0))
        await self.end_agent()
        if over := await self._over_quota():
            raise NotReady("server_exhausted", over)
        await self._clear_server_files()
        if self.port is None:
            raise SandboxError("the container has no published server port")
        started = time.time()
        argv = (
            "sh",
            "/harness/sandbox/inside/server.sh",
            CONTROL,
            str(SERVER_PORT_IN_CONTAINER),
            _agent(),
            str(SERVER_LOG_LIMIT),
        )
        await self._op(Spawn(argv=argv))
        with anyio.move_on_after(PID_TIMEOUT):
            while await self._server_pgid() is None:  # noqa: ASYNC110 - a file written inside the container sets no Event
                await anyio.sleep(0.002)  # the detached shell writes its pid first thing (a file read, or ~1 ms op)
        pgid = await self._server_pgid()
        if pgid is None:  # nothing of the agent runs now, but what it left in memory (/tmp) is still held
            raise InsideFailure(f"the server start command did not run in {self.name} within {PID_TIMEOUT:.0f} s")
        handle = ServerHandle(url=await self._server_base(), port=self.port, pgid=pgid)
        checked = [time.monotonic()]

        async def running() -> bool:
            if time.monotonic() - checked[0] >= HEALTH_INTERVAL:  # a gone container never answers: say so now
                checked[0] = time.monotonic()
                loss = await self.health(started)
                if loss is not None and not loss.paused:
                    raise SandboxError(loss.detail, loss.kind)
            return not await self._server_exited()

        async def listening() -> bool:
            return bool((await self._listeners(0)).sockets)

        try:
            try:
                await wait_ready(handle.url, timeout, running, request_timeout, listening)
            except NotReady as exc:
                if exc.kind != "server_exited":
                    raise
                # It may have exited because the port was taken: then what holds it is the failure to report.
                await self._check_holders(pgid, exc)
                raise
            await self._check_holders(pgid, None)
        except BaseException as exc:
            # Judged before the stop, which ends every process of the agent: a hog it ended would hide the cause.
            verdict = await self._judged(exc) if isinstance(exc, SandboxError) else exc
            with anyio.CancelScope(shield=True), contextlib.suppress(SandboxError):
                await self.stop_server(handle)
            if verdict is not exc:
                raise verdict from None
            raise
        return handle

    async def _check_holders(self, pgid: int, exited: NotReady | None) -> None:
        """NotReady(server_left_running) when anything outside the server's group holds the port (`exited`: the
        server already ended, as wait_ready saw; its leader gone by the time of the check counts the same)."""
        found = await self._listeners(pgid)
        strangers = [h for h in found.holders if h.pgid != pgid]
        # The new server is gone (it could not bind the port, say): what holds the port was not started by it.
        gone = exited is not None or found.leader_start is None
        if gone and (strangers or (found.unseen and found.sockets)):
            who = _holder(strangers[0]) if strangers else "a process that cannot be inspected"
            raise NotReady(
                "server_left_running",
                f"`bash run_server.sh` exited, and port {SERVER_PORT_IN_CONTAINER} is held by {who} outside the "
                "process group that `bash run_server.sh` runs in: a server left running (by an earlier turn or "
                "the harness, or detached by this start). Stop every server you start before you finish, and "
                "keep the server in run_server.sh's process group.",
            )
        if strangers or found.unseen:
            raise NotReady(
                "server_left_running", _left_running(strangers[0] if strangers else None, found.leader_start)
            )

    async def stop_server(self, handle: ServerHandle) -> None:
        """TERM then KILL the server's process group, then whatever still holds the server port (a process
        the server or the harness detached); wait until nothing listens there."""
        pgid = await self._server_pgid()
        if pgid is None:
            # Whatever the server left (detached, or a writer) goes before the next harness call; any still alive
            # at the bound are the next server start's to judge (`end_agent`).
            with contextlib.suppress(NotReady):
                await self.end_agent()
            return
        # With the agent's uid, the stop ends the agent's processes too (`end_agent`), in the same round trip.
        stop = StopServer(pgid=pgid, port=SERVER_PORT_IN_CONTAINER, as_=_agent(), uid=agent_ids()[0])
        await self._op(stop, timeout=30)
        await self._clear_server_files()
