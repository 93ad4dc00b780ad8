"""The sealed container every Docker sandbox is: its create request, network seal, health and server checks.

`docker.DockerSandbox` (files bind-mounted from the daemon's disk) and `volume.VolumeSandbox` (files
in the engine's volumes) differ only in how files reach the container and how its launcher is
reached; both build on `SealedContainer`, which holds what the engine sees the same way in both: the
container's limits and capabilities, the firewall loaded by a helper before the agent runs, the
judgement of a lost container from the engine's state and events, and the server's start and stop
with the check that whatever answers is the server just started.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import aiodocker
import aiohttp
import anyio

from protocol.kinds import InfraKind
from staminad.sandbox.base import (
    SERVER_PORT_IN_CONTAINER,
    ContainerSettings,
    Grant,
    Loss,
    NotReady,
    SandboxError,
    SandboxPaths,
    ServerHandle,
)
from staminad.sandbox.container import (
    _KEEPALIVE,
    CONTROL,
    EVENT_SETTLE,
    EVENTS,
    FSIZE,
    HEALTH_INTERVAL,
    LABEL_SANDBOXES,
    LABEL_SCENARIO,
    LABEL_SWEEP,
    NETWORK,
    OP_TIMEOUT,
    OUTPUT_LIMIT,
    PID_TIMEOUT,
    QUOTA_KB,
    ROOT,
    TMP_MB,
    _agent,
    _started,
    agent_ids,
    container_name,
    firewall,
    judge,
)
from staminad.sandbox.readiness import wait_ready
from staminad.sandbox.replies import A, Alive, Done, Ended, Holder, Listeners, Stopped, Usage

SERVER_LOG_LIMIT = 1 << 20  # bytes of the server's output its log keeps (the newest; see logcap.py)
HARNESS_LOG_LIMIT = 4 << 20  # bytes of a harness's output its job log keeps
PIDS_SPARE = 8  # a container this close to its pid limit is full: the engine's own exec needs a few
MEMORY_FULL = 0.95  # share of the memory limit in use that counts as full


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


class SealedContainer:
    """One scenario's labelled, sealed container on an engine (see the module docstring)."""

    def __init__(
        self,
        docker: aiodocker.Docker,
        root: Path,
        sweep: str,
        label: str,
        run: ContainerSettings,
        creations: anyio.CapacityLimiter | None = None,
        grant: Grant = Grant(),  # noqa: B008 - frozen
        llm: tuple[str, int] | None = None,
        publish_ip: str = "127.0.0.1",
    ) -> None:
        self.docker = docker
        self.root = root = root.resolve()
        self.grant = grant
        self.image = grant.image or run.image  # each configuration's adapter may name its own layer
        self.quota_kb = QUOTA_KB
        self.llm = llm if grant.llm else None  # (address, port) of the gateway this sandbox may reach
        self.paths = SandboxPaths("/workspace", "/stamina", "/harness")
        self.sweep, self.label, self.run = sweep, label, run
        self.name = container_name(sweep, root)
        self.port: int | None = None  # the server's published port on the engine's host
        self.publish_ip = publish_ip  # the engine host's address the port is published on
        self.creations = creations or anyio.CapacityLimiter(1)
        self.llm_host = "127.0.0.1"

    def _labels(self) -> dict[str, str]:
        return {LABEL_SWEEP: self.sweep, LABEL_SCENARIO: self.label, LABEL_SANDBOXES: str(self.root.parent)}

    def describe(self) -> dict[str, Any]:
        return {
            "runtime": "docker",
            "container": self.name,
            "image": self.image,
            "root": str(self.root),
            "port": self.port,
        }

    async def _container(self) -> Any:
        try:
            with anyio.fail_after(OP_TIMEOUT):
                return await self.docker.containers.get(self.name)
        except aiodocker.exceptions.DockerError as exc:
            if exc.status == 404:
                return None
            raise SandboxError(f"docker: {exc.message}", "engine_error") from None
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise SandboxError(f"docker engine: {type(exc).__name__}: {exc}", "engine_error") from None

    def _config(self) -> dict[str, Any]:
        """The container's create request (the server port published at `self.port`, "" for one Docker picks)."""
        memory = self.run.memory_mb * 1024 * 1024
        return {
            "Image": self.image,
            "Cmd": _KEEPALIVE,
            # Root's keepalive only: Docker gives an exec the capabilities of the container's user, and the root
            # side needs SETUID/SETGID/KILL; every process of the agent runs as the agent (setpriv), with none.
            "User": ROOT,
            "WorkingDir": "/workspace",
            "Env": ["HOME=/workspace/.home", "TMPDIR=/tmp"],
            "Labels": self._labels(),
            "ExposedPorts": {f"{SERVER_PORT_IN_CONTAINER}/tcp": {}},
            "HostConfig": {
                **self._mounts(),
                "Tmpfs": {"/tmp": f"rw,nosuid,nodev,size={TMP_MB}m,mode=1777"},
                "ReadonlyRootfs": True,
                "PortBindings": {
                    f"{SERVER_PORT_IN_CONTAINER}/tcp": [{"HostIp": self.publish_ip, "HostPort": str(self.port or "")}]
                },
                "NanoCpus": int(self.run.cpus * 1e9),
                "Memory": memory,
                "MemorySwap": memory,  # no swap on top of the memory limit
                "PidsLimit": self.run.pids,
                "Ulimits": [{"Name": "fsize", "Soft": FSIZE, "Hard": FSIZE}, {"Name": "core", "Soft": 0, "Hard": 0}],
                "Init": True,
                "NetworkMode": NETWORK,
                "Sysctls": {"net.ipv6.conf.all.disable_ipv6": "1"},  # the firewall below is IPv4's
                "CapDrop": ["ALL"],
                # SETUID/SETGID: the root side drops to the agent (setpriv); KILL: it stops the agent's groups.
                "CapAdd": ["SETUID", "SETGID", "KILL"],
                "SecurityOpt": ["no-new-privileges"],
            },
        }

    async def _seal(self, container: Any) -> None:
        """Load the firewall into the container's network namespace before any agent process runs.

        A short-lived helper container joins the namespace with NET_ADMIN alone and runs iptables-restore;
        the sandbox container itself never holds NET_ADMIN, so the agent cannot undo the rules.
        """
        config: dict[str, Any] = {
            "Image": self.image,
            "User": ROOT,
            "Env": [f"RULES={firewall(self.llm)}"],
            "Cmd": ["sh", "-c", 'printf "%s" "$RULES" | iptables-restore'],
            "Labels": self._labels(),
            "HostConfig": {
                "NetworkMode": f"container:{container.id}",
                "CapDrop": ["ALL"],
                "CapAdd": ["NET_ADMIN"],
                "ReadonlyRootfs": True,
                "SecurityOpt": ["no-new-privileges"],
                "Memory": 64 << 20,
            },
        }
        helper = None
        name = f"{self.name}-seal"
        try:
            with anyio.fail_after(OP_TIMEOUT):
                # A daemon killed while sealing leaves its helper behind under this name: it is ours, remove it.
                with contextlib.suppress(aiodocker.exceptions.DockerError):
                    await (await self.docker.containers.get(name)).delete(force=True)
                helper = await self.docker.containers.create(config=config, name=name)
                await helper.start()
                code = (await helper.wait()).get("StatusCode")
                if code != 0:
                    logs = "".join(await helper.log(stdout=True, stderr=True, tail=5))[-500:]
                    raise SandboxError(f"cannot seal the network of {self.name}: {logs.strip() or f'exit {code}'}")
        except aiodocker.exceptions.DockerError as exc:
            raise SandboxError(f"cannot seal the network of {self.name}: {exc.message}") from None
        finally:
            if helper is not None:
                with (
                    anyio.CancelScope(shield=True),
                    anyio.move_on_after(OP_TIMEOUT),
                    contextlib.suppress(aiodocker.exceptions.DockerError),
                ):
                    await helper.delete(force=True)

    async def _usable(self) -> None:
        """Raise SandboxError (`sandbox_lost`) unless the container runs and is not paused."""
        container = await self._container()
        state = (container._container.get("State") or {}) if container is not None else {}
        if container is None or state.get("Paused") or not state.get("Running"):
            what = "gone" if container is None else "paused" if state.get("Paused") else "not running"
            raise SandboxError(f"container {self.name} is {what}")

    # --- what each way of reaching the container's files provides ----------------------------------

    def _mounts(self) -> dict[str, Any]:
        """The HostConfig entries that give the container its workspace, control, layer and prompts."""
        raise NotImplementedError

    async def _op(self, op: str, args: dict[str, Any], answer: type[A], timeout: float = OP_TIMEOUT) -> A:
        """One root-side operation of the container's launcher (see `launcher`), its answer decoded as `answer`."""
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

    async def _exec(self, cmd: list[str], detach: bool = False, timeout: float = OP_TIMEOUT, user: str = ROOT) -> int:
        return (await self._run(cmd, detach, timeout, user))[0]

    async def _run(
        self, cmd: list[str], detach: bool = False, timeout: float = OP_TIMEOUT, user: str = ROOT
    ) -> tuple[int, bytes]:
        """Run `cmd` in the container: (exit code, its first OUTPUT_LIMIT bytes of output). Any failure of the
        container or the engine is a SandboxError (`sandbox_lost` when the container is gone or frozen)."""
        container = await self._container()
        if container is None:
            raise SandboxError(f"container {self.name} is gone")
        out = bytearray()
        try:
            with anyio.fail_after(timeout):
                ex = await container.exec(cmd=cmd, user=user, workdir="/workspace", stdout=True, stderr=True)
                if detach:
                    await ex.start(detach=True)
                    return 0, b""
                async with ex.start(detach=False) as stream:
                    while (msg := await stream.read_out()) is not None:
                        if len(out) < OUTPUT_LIMIT:
                            out += msg.data[: OUTPUT_LIMIT - len(out)]
                return int((await ex.inspect())["ExitCode"] or 0), bytes(out)
        except aiodocker.exceptions.DockerError as exc:
            # 404: removed; 409: paused or not running. Anything else is the engine failing.
            kind: InfraKind = "sandbox_lost" if exc.status in (404, 409) else "engine_error"
            raise SandboxError(f"docker exec in {self.name}: {exc.message}", kind) from None
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise SandboxError(f"docker exec in {self.name}: {type(exc).__name__}: {exc}", "engine_error") from None

    async def health(self, since: float) -> Loss | None:
        """None while the container runs; else why not (see `judge`)."""
        container = await self._container()
        if container is None:
            return Loss(kind="sandbox_lost", detail=f"container {self.name} was removed")
        state = container._container.get("State") or {}
        if state.get("Paused"):
            return Loss(kind="sandbox_lost", detail=f"container {self.name} is paused", paused=True)
        if state.get("Running") and _started(state.get("StartedAt", "")) <= since:
            return None
        actions = await self._actions(since)
        if actions is not None and "die" not in actions and not state.get("Running"):
            # The engine logs `die` as it marks the container stopped: a state read in between sees no event yet.
            await anyio.sleep(EVENT_SETTLE)
            actions = await self._actions(since)
        return judge(self.name, state, actions)

    async def frozen(self, since: float) -> str:
        """Why the container was paused from outside since `since` ("" if it was not, or the engine cannot say).

        A pause that ends within a suite leaves it running, so `health` sees nothing; requests that timed out
        meanwhile are the platform's doing, never the server's: the engine's event log says so.
        """
        actions = await self._actions(since)
        if actions is not None and "pause" in actions:
            return f"container {self.name} was paused from outside"
        return ""

    async def _actions(self, since: float) -> set[str] | None:
        """The engine's lifecycle events for the container since `since` (see `EVENTS`); None if unknown."""
        params = {
            "since": f"{since - 1:.0f}",
            "until": f"{time.time() + 1:.0f}",
            "filters": json.dumps({"container": [self.name], "type": ["container"]}),
        }
        try:
            with anyio.fail_after(OP_TIMEOUT):
                async with self.docker._query("events", params=params) as response:
                    # The engine streams one event per chunk until `until`: read to the end (bounded), since a
                    # single read returns only the first chunk (often an exec event, not the kill).
                    data = bytearray()
                    while len(data) < OUTPUT_LIMIT and (chunk := await response.content.read(OUTPUT_LIMIT)):
                        data += chunk
                    text = bytes(data[:OUTPUT_LIMIT]).decode("utf-8", "replace")
        except (aiodocker.exceptions.DockerError, TimeoutError, aiohttp.ClientError, OSError):
            return None
        actions = set()
        for line in text.splitlines():
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                event = json.loads(line)
                # The filter matches names by prefix: the container's sealing helper (`<name>-seal`) too.
                if (event.get("Actor") or {}).get("Attributes", {}).get("name") != self.name:
                    continue
                action = str(event.get("Action", "")).split(":")[0]
                if action in EVENTS:
                    actions.add(action)
        return actions

    async def job_alive(self, job_id: str) -> bool:
        pid = await self._pid(job_id)
        if pid is None:
            return False
        try:
            return (await self._op("alive", {"pgid": pid}, Alive)).alive
        except SandboxError:
            if await self._container() is None:
                return False  # the container is gone, and the job with it
            raise  # paused, or the engine failing: not the job's doing

    async def kill_job(self, job_id: str) -> None:
        pid = await self._pid(job_id)
        if pid is not None and await self._container() is not None:
            await self._op("kill", {"pgid": pid}, Done)

    async def _listeners(self, leader: int) -> Listeners:
        """What holds the server port inside the container, read as the agent (see `launcher`)."""
        args = {"port": SERVER_PORT_IN_CONTAINER, "leader": leader, "as": _agent()}
        return await self._op("listeners", args, Listeners)

    async def end_agent(self) -> int:
        """End every process of the agent's user in the container (see `pgroups.end_user`): how many were ended.

        Run at the end of each phase, so nothing of the agent outlives it: whatever the harness left (a server
        it tried, a detached pid filler, memory hog or disk writer) is gone before the server starts, and
        whatever the server left before the next harness call.
        """
        uid = agent_ids()[0]
        if uid == 0:
            return 0
        return (await self._op("end_agent", {"uid": uid}, Ended)).ended

    async def _over_quota(self) -> str:
        """Why the workspace is over its quota now that nothing of the agent runs ("" when it is not): a writer the
        harness detached from the wrapper's watchdog does not get to keep what it wrote past the quota."""
        found = await self._op("usage", {"path": self.paths.workspace, "as": _agent()}, Usage)
        used = found.kb
        if used is None:  # nothing of the agent runs now: only its tree can defeat the measurement
            return f"the workspace could not be measured ({found.interfered or 'no answer'})"
        if used > self.quota_kb:
            return (
                f"the workspace holds {used / 1024 / 1024:.1f} GiB, over its quota of "
                f"{self.quota_kb / 1024 / 1024:.1f} GiB: delete what the server does not need"
            )
        return ""

    async def exhausted(self) -> str:
        """Why the container cannot run more of anything by its own contents' doing (its pid limit or memory held),
        or "" when it is not so: the engine's own statistics, which the agent cannot write."""
        container = await self._container()
        if container is None:
            return ""
        try:
            with anyio.fail_after(OP_TIMEOUT):
                stats = await container.stats(stream=False)
        except (aiodocker.exceptions.DockerError, TimeoutError, aiohttp.ClientError, OSError):
            return ""
        stat = stats[0] if isinstance(stats, list) and stats else stats
        if not isinstance(stat, dict):
            return ""
        pids = stat.get("pids_stats") or {}
        current, limit = int(pids.get("current") or 0), int(pids.get("limit") or 0)
        if limit and current >= limit - PIDS_SPARE:
            return f"the sandbox's process limit was exhausted ({current} of {limit} processes)"
        memory = stat.get("memory_stats") or {}
        detail = memory.get("stats") or {}
        cache = int(detail.get("inactive_file", detail.get("total_inactive_file", 0)) or 0)  # reclaimable: not held
        used, cap = int(memory.get("usage") or 0) - cache, int(memory.get("limit") or 0)
        if cap and used >= cap * MEMORY_FULL:
            return f"the sandbox's memory limit was exhausted ({used >> 20} of {cap >> 20} MiB)"
        return ""

    async def _judged(self, exc: SandboxError) -> NotReady | SandboxError:
        """An operation of the server start that failed: the agent's (`server_exhausted`) when the container runs and
        its own processes hold its limits, else the platform fault it was raised as."""
        if exc.kind != "engine_error":
            return exc
        loss = await self.health(time.time() - OP_TIMEOUT)
        if loss is not None:
            return SandboxError(loss.detail, loss.kind)
        why = await self.exhausted()
        return NotReady("server_exhausted", f"{why}, so the server could not be started or checked") if why else exc

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
        await self._op(
            "spawn",
            {
                "argv": [
                    "sh",
                    "/harness/sandbox/server.sh",
                    CONTROL,
                    str(SERVER_PORT_IN_CONTAINER),
                    _agent(),
                    str(SERVER_LOG_LIMIT),
                ]
            },
            Done,
        )
        with anyio.move_on_after(PID_TIMEOUT):
            while await self._server_pgid() is None:  # noqa: ASYNC110 - a file written inside the container sets no Event
                await anyio.sleep(0.01)  # the detached shell writes its pid first thing
        pgid = await self._server_pgid()
        if pgid is None:
            raise SandboxError(
                f"the server start command did not run in {self.name} within {PID_TIMEOUT:.0f} s", "engine_error"
            )
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
            found = await self._listeners(0)
            if found.interfered:  # the agent's processes stopped the check of its own port
                raise NotReady("server_left_running", f"{found.interfered}, so the server could not be checked")
            return bool(found.sockets)

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
        if found.interfered:  # the agent's processes stopped the check of its own port
            raise NotReady("server_left_running", f"{found.interfered}, so the server could not be checked")
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
            await self.end_agent()  # whatever the server left (detached, or a writer) goes before the next harness call
            return
        stop: dict[str, Any] = {"pgid": pgid, "port": SERVER_PORT_IN_CONTAINER, "as": _agent()}
        if uid := agent_ids()[0]:
            stop["uid"] = uid  # the stop ends the agent's processes too (`end_agent`), in the same round trip
        await self._op("stop", stop, Stopped, timeout=30)
        await self._clear_server_files()
