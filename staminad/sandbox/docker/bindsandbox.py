"""The `docker` runtime (aiodocker): one labelled, sealed container per scenario, its files bind-mounted.

The container itself (limits, seal, health, server checks) is `sealed.SealedContainer`'s, shared with
the volume mode (`volumesandbox`), whose files live in the engine's volumes instead.

The workspace is bind-mounted from the host, so the agent's code and its harness session (HOME lives
in the workspace) survive a lost container, which `prepare` recreates. What the container is given:

- its agent layer only (`Grant.layer`: the wrapper, and the launcher or the built-in agent's code),
  staged per sandbox and mounted read-only at /harness; nothing of the suite, the generators, the
  pack or the seed, and the reference code only in the sandboxes of the built-in agents that run it;
- the prompts, read-only at /stamina/prompts; the rest of the control directory (job commands,
  markers, logs, server pid) is mounted below /opt/stamina (root, 0700), where only the runtime's
  root-side processes (wrapper, server launcher, kills) reach; the agent runs as `agent` (AGENT_UID)
  through setpriv and cannot read job commands, forge markers or signal the wrapper;
- no capabilities but SETUID/SETGID (the root side drops to the agent) and KILL (the root side stops
  the agent's process groups), no-new-privileges, a read-only root file system, a bounded /tmp,
  an `fsize` limit and a workspace quota the wrapper's watchdog enforces, memory-swap = memory, pids;
- a network namespace sealed by iptables rules loaded before anything of the agent runs (by one
  short-lived helper container holding NET_ADMIN alone; the container never holds it): no outgoing
  connection but to the sweep's LLM gateway when `Grant.llm`, no incoming one but to the server port.
  So no sandbox reaches another or a host service, on one shared project network (ICC off as well).
  The rules live in the container's namespace and go with it: nothing to clean up or to leak.

The root side's operations (launching the wrapper, starting and stopping the server, liveness and
listener checks) go to the container's launcher (`launcher`, started once per container; its FIFO
and replies are in the root-only control directory), with `docker exec` of the same code as the
fallback when no launcher reads: measured on one busy machine (benchmarks/bench_docker_launch.py),
a detached start costs ~65 ms by exec and ~5 ms by the launcher, a liveness check ~68 ms and ~1 ms.

The server listens on a fixed port inside and is published on 127.0.0.1 at a port allocated when
the container is created; the suite reaches it at the container's own address on the project's
network instead whenever this host is on that network (no userland proxy in between). Whatever
answers there is checked to be the server just started (every listener in its process group, read
as the agent, who alone can see its processes' descriptors);
a fresh port per start would need a new published port and firewall rule each time, and would hide
a server left running rather than name it in the feedback.

Several daemons (or users) on one Docker engine may run sweeps of the same name: a container is
named after its sandbox directory's path as well, and carries that sweep's sandbox directory as a
label (`staminabench.sandboxes`), so each process finds, adopts and reaps only its own containers.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiodocker
import aiohttp
import anyio

from protocol.kinds import InfraKind
from staminad.sandbox.base import (
    HARNESS_DIR,
    SERVER_PORT_IN_CONTAINER,
    Grant,
    SandboxError,
    SandboxFactory,
    write_job,
)
from staminad.sandbox.bounded import read_int
from staminad.sandbox.docker.container import (
    CONTROL,
    FSIZE,
    LABEL_SANDBOXES,
    LABEL_SCENARIO,
    LABEL_SWEEP,
    LAUNCHER,
    NETWORK,
    OP_TIMEOUT,
    TMP_MB,
    ContainerFactory,
    _agent,
    agent_ids,
    container_name,
    ensure_network,
    forget_network,
    judge,
    network_gone,
    reap,
)
from staminad.sandbox.docker.fifoclient import Channel
from staminad.sandbox.docker.reach import direct_address
from staminad.sandbox.docker.replies import NOTHING, A, decode
from staminad.sandbox.docker.requests import Request, Spawn, answer_of, wire
from staminad.sandbox.docker.sealed import HARNESS_LOG_LIMIT, SealedContainer
from staminad.sandbox.hostfiles import HostFiles, stage_layer
from staminad.sandbox.inside.beneath import ensure_dir
from staminad.sandbox.ports import PortAllocator
from staminad.sandbox.settings import ContainerSettings

log = logging.getLogger(__name__)

LAUNCHER_START_TIMEOUT = 10.0  # seconds for a new launcher to open its FIFO
RESTART_EVERY = 5.0  # seconds between attempts to restart a launcher found gone


class DockerSandbox(HostFiles, SealedContainer):
    """A sealed container whose workspace and control directory are bind-mounted from the daemon's disk."""

    use_launcher = True  # False: every root-side operation by `docker exec` (the benchmarks' baseline)
    direct = True  # False: the server always through its published port (the benchmarks' baseline)

    def __init__(
        self,
        docker: aiodocker.Docker,
        root: Path,
        sweep: str,
        label: str,
        run: ContainerSettings,
        ports: PortAllocator,
        creations: anyio.CapacityLimiter | None = None,
        grant: Grant = Grant(),  # noqa: B008 - frozen
        llm: tuple[str, int] | None = None,
    ) -> None:
        super().__init__(docker, root, sweep, label, run, creations, grant, llm)
        self.host_workspace = self.root / "workspace"
        self.host_control = self.root / "control"
        self.host_layer = self.root / "layer"
        self.ports = ports
        self.channel = Channel(self.host_control)
        self.seed_owner = agent_ids() if os.getuid() == 0 else None  # seeded files are the agent's to edit
        self._launcher_started = -RESTART_EVERY  # monotonic time a launcher found gone was last restarted
        self._direct: str | None = None  # the container's address the server is reached at ("": the published port)

    def _mounts(self) -> dict[str, Any]:
        return {
            "Binds": [
                f"{self.host_workspace}:/workspace",
                f"{self.host_control}/prompts:/stamina/prompts:ro",
                f"{self.host_control}:{CONTROL}",
                f"{self.host_layer}:/harness:ro",
            ]
        }

    def _host_dirs(self) -> None:
        """Workspace for the agent; control and layer for the root side (the agent reads only the prompts).

        The workspace and `.home` are the agent's: whatever it left there (a link to a host directory, a file where
        `.home` belongs) is never followed or chowned through (`beneath.ensure_dir`). Files the engine seeds are
        created owned by the agent (`seed_owner`), so nothing in the workspace is ever chowned by path.
        """
        uid, gid = agent_ids()
        self.host_workspace.mkdir(parents=True, exist_ok=True)  # the sandbox directory's own: the daemon's
        agent = (uid, gid) if os.getuid() == 0 else None
        if agent is not None:
            os.chown(self.host_workspace, uid, gid, follow_symlinks=False)
        ensure_dir(self.host_workspace, ".home", 0o755, agent)
        for d in (
            self.host_control / "markers",
            self.host_control / "jobs",
            self.host_control / "prompts",
            self.host_control / "replies",
        ):
            d.mkdir(parents=True, exist_ok=True)
        fifo = self.channel.fifo
        if not fifo.is_fifo():
            fifo.unlink(missing_ok=True)
            os.mkfifo(fifo, 0o600)
        if agent is None:
            # The root side inside is not this user and holds no DAC_OVERRIDE: it needs the mode bits. The
            # agent never reaches these directories (mounted below /opt/stamina, which is root's, 0700).
            for d in (
                self.host_control,
                self.host_control / "markers",
                self.host_control / "jobs",
                self.host_control / "replies",
            ):
                d.chmod(0o777)
            fifo.chmod(0o666)
        stage_layer(self.host_layer, self.grant.layer)

    async def prepare(self) -> None:
        """Create (or recreate after a loss) and start the scenario's container, sealed."""
        await anyio.to_thread.run_sync(self._host_dirs)
        self._direct = None  # a recreated container has an address of its own
        await ensure_network(self.docker)
        found = await self._container()
        container = found if found is not None and await self._adopt(found) else None
        if created := container is None:
            self.port = self.ports.allocate()
            config = self._config()
            try:
                async with self.creations:
                    container = await self._create(config)
            except aiodocker.exceptions.DockerError as exc:
                self.ports.release(self.port)
                raise SandboxError(f"cannot create container {self.name}: {exc.message}") from None
            except BaseException:  # the network made again, a timeout, a cancel: the port is not kept either
                self.ports.release(self.port)
                raise
        helper = None  # the seal's helper, made while a new container starts
        try:
            with anyio.fail_after(OP_TIMEOUT):
                if created:
                    helper = await self._start_beside_helper(container)
                elif not (await container.show())["State"]["Running"]:
                    await container.start()
        except (aiodocker.exceptions.DockerError, TimeoutError, aiohttp.ClientError, OSError) as exc:
            if isinstance(exc, aiodocker.exceptions.DockerError) and network_gone(exc):
                forget_network(self.docker)  # the retry's `prepare` makes it again
            # Say a program outside took the published port meanwhile: this container can never start, so
            # it goes, and the retry's `prepare` creates one on a fresh port.
            with anyio.CancelScope(shield=True), contextlib.suppress(SandboxError):
                await self._remove(container)
            if self.port is not None:
                self.ports.release(self.port)
            message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            # "port is already allocated": another container (say, one a dead daemon left) publishes it.
            taken = any(s in str(message) for s in ("address already in use", "port is already allocated"))
            kind: InfraKind = "port_taken" if taken else "engine_error"
            raise SandboxError(f"cannot start container {self.name}: {message}", kind) from None
        await self.own_current()  # started now, or adopted running: this is the container made ready (see `health`)
        await self._seal_and_launch(container, helper)

    async def _adopt(self, container: Any) -> bool:
        """Lock a found container's port as `allocate` would; if another process or scenario has it, remove it."""
        info = container._container if "NetworkSettings" in container._container else await container.show()
        binding = (info.get("HostConfig", {}).get("PortBindings") or {}).get(f"{SERVER_PORT_IN_CONTAINER}/tcp")
        port = int(binding[0]["HostPort"]) if binding else None
        ours = port is not None and port == self.port and port in self.ports.held  # this sandbox's, prepared again
        if port is None or ours or self.ports.adopt(port):
            self.port = port
            return True
        log.warning("container %s publishes port %d, which is no longer ours: recreating it", self.name, port)
        self.port = None
        with anyio.CancelScope(shield=True):
            await self._remove(container, "engine_error")
        return False

    async def _remove(self, container: Any, kind: InfraKind = "sandbox_lost") -> None:
        try:  # one already gone is fine
            with anyio.fail_after(OP_TIMEOUT):
                await container.delete(force=True)
        except TimeoutError:
            raise SandboxError(f"cannot remove {self.name}: no answer in {OP_TIMEOUT:.0f} s", kind) from None
        except aiodocker.exceptions.DockerError as exc:
            if exc.status != 404:
                raise SandboxError(f"cannot remove {self.name}: {exc.message}", kind) from None

    async def _seal_and_launch(self, container: Any, helper: Any = None) -> None:
        """Load the firewall (idempotent: iptables-restore replaces the whole table) while the launcher starts.

        The launcher is root's and runs nothing of the agent's until asked, after `prepare`: ready is the longer of
        the two, not their sum. A failure of either is raised as itself (not in an exception group), the other
        step cancelled (the seal's helper is removed all the same, by the engine once it exits).
        """
        failures: list[Exception] = []

        async def step(run: Callable[[], Awaitable[None]]) -> None:
            try:
                await run()
            except Exception as exc:  # noqa: BLE001 - re-raised below, once the other step is cancelled and done
                failures.append(exc)
                tg.cancel_scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(step, self._ensure_launcher)
            tg.start_soon(step, lambda: self._seal(container, helper))
        if failures:
            raise failures[0]

    async def _ensure_launcher(self) -> None:
        """Start the container's launcher unless one reads its FIFO (say, adopted after a daemon restart)."""
        if self.channel.reading() or not self.use_launcher:
            return
        await self._start_launcher()
        with anyio.move_on_after(LAUNCHER_START_TIMEOUT):
            while not self.channel.reading():  # noqa: ASYNC110 - another process's FIFO open sets no Event of ours
                await anyio.sleep(0.005)  # the launcher opens its FIFO first thing
        # Without one every operation still works, by `docker exec`; the next operation tries again.

    async def _start_launcher(self) -> None:
        # Its standard streams on /dev/null, not the exec's: a launcher holding them keeps the engine waiting for
        # the detached exec's output to end, and the container's next `docker exec` waited ~3.9 s behind that.
        serve = f"exec setsid -f python3 -I -S {LAUNCHER} serve {CONTROL} </dev/null >/dev/null 2>&1"
        await self._exec(["sh", "-c", serve], detach=True)

    async def _server_base(self) -> str:
        """The container's own address on the project's network when this host is on it, else the published
        port (see `reach`)."""
        if self._direct is None:
            self._direct = await direct_address(self.docker, self.name) if self.direct else ""
        if self._direct:
            return f"http://{self._direct}:{SERVER_PORT_IN_CONTAINER}"
        return await super()._server_base()

    async def _op(self, request: Request[A], timeout: float = OP_TIMEOUT) -> A:
        """One root-side operation (see `launcher`): through the container's launcher, or, when none reads
        its FIFO, once by `docker exec` of the same code (and a new launcher is started for what follows)."""
        op, args = wire(request)
        answer = answer_of(request)
        if op == "spawn":
            if self.channel.post(op, args):
                return decode(NOTHING, answer, op)
        else:
            raw = await self.channel.call(op, args, timeout, self._usable)
            if raw is not None:
                return decode(raw, answer, op)
        code, out = await self._run(["python3", "-I", "-S", LAUNCHER, "once", op, json.dumps(args)], timeout=timeout)
        if code != 0:
            raise SandboxError(f"{op} failed in {self.name} (exit {code}): {out[:200]!r}", "engine_error")
        found = decode(out if op != "spawn" else NOTHING, answer, op)
        if self.use_launcher and time.monotonic() - self._launcher_started >= RESTART_EVERY:  # one per RESTART_EVERY
            self._launcher_started = time.monotonic()
            with contextlib.suppress(SandboxError):
                await self._start_launcher()
        return found

    async def launch(self, job_id: str, argv: list[str], env: dict[str, str]) -> None:
        job = write_job(self.host_control, self.paths, job_id, argv, env)
        if os.getuid() != 0:
            job.chmod(0o777)  # the root side inside writes the pid and log here (see `_host_dirs`)
        wrapper = (
            "sh",
            "/harness/sandbox/inside/wrapper.sh",
            f"{CONTROL}/jobs/{job_id}",
            f"{CONTROL}/markers/{job_id}.json",
        )
        limits = (str(self.quota_kb), "/workspace", str(HARNESS_LOG_LIMIT))
        await self._op(Spawn(argv=(*wrapper, _agent(), *limits)))

    async def _pid(self, job_id: str) -> int | None:
        return read_int(self.host_control / "jobs" / job_id / "pid")

    async def _server_pgid(self) -> int | None:
        return read_int(self.host_control / "server.pid")

    async def _server_exited(self) -> bool:
        return (self.host_control / "server.exit").exists()

    async def _clear_server_files(self) -> None:
        for name in ("server.pid", "server.exit"):
            (self.host_control / name).unlink(missing_ok=True)

    async def close(self) -> None:
        """Remove the container (the workspace stays on the host; `prepare` recreates it on resume)."""
        container = await self._container()
        if container is not None:
            await self._remove(container)
        if self.port is not None:
            self.ports.release(self.port)
        for name in ("server.pid", "server.exit"):  # pids of a removed container mean nothing in the next one
            (self.host_control / name).unlink(missing_ok=True)


class DockerFactory(ContainerFactory):
    """Bind-mounted sandboxes sharing one aiodocker client, created lazily inside the running event loop."""

    def __init__(self, run: ContainerSettings, ports: PortAllocator) -> None:
        super().__init__(run)
        self.ports = ports

    def __call__(self, root: Path, label: str, grant: Grant = Grant()) -> DockerSandbox:  # noqa: B008 - frozen
        sandbox = DockerSandbox(
            self.client(), root, root.parent.name, label, self.run, self.ports, self.creations, grant, self.llm()
        )
        sandbox.llm_host = self.bridge_ip or "127.0.0.1"
        return sandbox

    async def aclose(self, sandboxes: Path) -> None:
        """Remove whatever container of the sweep (its sandbox directory) is left, then close the client."""
        client, self._client = self._client or self.connect(), None
        try:
            await reap(client, Path(await anyio.Path(sandboxes).resolve()))
        finally:
            await client.close()


def docker_factory(run: ContainerSettings, ports: PortAllocator) -> SandboxFactory:
    return DockerFactory(run, ports)


__all__ = [  # also the shared names tests and tools import from here
    "CONTROL",
    "FSIZE",
    "HARNESS_DIR",
    "LABEL_SANDBOXES",
    "LABEL_SCENARIO",
    "LABEL_SWEEP",
    "LAUNCHER",
    "NETWORK",
    "TMP_MB",
    "DockerFactory",
    "DockerSandbox",
    "agent_ids",
    "container_name",
    "docker_factory",
    "ensure_network",
    "judge",
    "reap",
    "stage_layer",
]
