"""The `docker` runtime (aiodocker): one labelled, sealed container per scenario.

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
  privileged exec of `iptables-restore`; the container never holds NET_ADMIN): no outgoing
  connection but to the sweep's LLM gateway when `Grant.llm`, no incoming one but to the server port.
  So no sandbox reaches another or a host service, on one shared project network (ICC off as well).
  The rules live in the container's namespace and go with it: nothing to clean up or to leak.

The root side's operations (launching the wrapper, starting and stopping the server, liveness and
listener checks) go to the container's launcher (`launcher`, started once per container; its FIFO
and replies are in the root-only control directory), with `docker exec` of the same code as the
fallback when no launcher reads: measured on one busy machine (benchmarks/bench_docker_launch.py),
a detached start costs ~65 ms by exec and ~5 ms by the launcher, a liveness check ~68 ms and ~1 ms.

The server listens on a fixed port inside and is published on 127.0.0.1 at a port allocated when
the container is created. Whatever answers there is checked to be the server just started (every
listener in its process group, read as the agent, who alone can see its processes' descriptors);
a fresh port per start would need a new published port and firewall rule each time, and would hide
a server left running rather than name it in the feedback.

Several daemons (or users) on one Docker engine may run sweeps of the same name: a container is
named after its sandbox directory's path as well, and carries that sweep's sandbox directory as a
label (`staminabench.sandboxes`), so each process finds, adopts and reaps only its own containers.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import aiodocker
import aiohttp
import anyio

from staminad.sandbox.base import (
    SERVER_PORT_IN_CONTAINER,
    ContainerSettings,
    Grant,
    Loss,
    NotReady,
    SandboxError,
    SandboxFactory,
    SandboxPaths,
    ServerHandle,
    write_job,
)
from staminad.sandbox.bounded import read_int
from staminad.sandbox.channel import Channel
from staminad.sandbox.hostfiles import HostFiles
from staminad.sandbox.image import AGENT_UID, PRIVATE_DIR
from staminad.sandbox.ports import PortAllocator
from staminad.sandbox.readiness import wait_ready

LABEL_SWEEP = "staminabench.sweep"
LABEL_SCENARIO = "staminabench.scenario"
LABEL_SANDBOXES = "staminabench.sandboxes"  # the sweep's sandbox directory on the host: whose container it is
NETWORK = "staminabench-sealed"  # ICC off; the older `staminabench` network (ICC on) is no longer used
HARNESS_DIR = Path(__file__).parents[1]
CONTROL = f"{PRIVATE_DIR}/control"  # the control directory as the root side sees it
OP_TIMEOUT = 60.0
TMP_MB = 512  # the writable /tmp (tmpfs, counted in the memory limit)
FSIZE = 1 << 30  # bytes: the largest file any process may write
QUOTA_KB = 2 << 20  # the workspace size past which the wrapper kills the harness (2 GiB)
ROOT = "0:0"  # the runtime's own processes inside: wrapper, server launcher, kills
_KEEPALIVE = ["sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"]
OUTPUT_LIMIT = 64 * 1024  # bytes read back from an exec or an events query
PID_TIMEOUT = 10.0  # seconds for the detached server shell to record its process group
HEALTH_INTERVAL = 1.0  # seconds between container state checks while a server starts
LAUNCHER = "/harness/sandbox/launcher.py"
LAUNCHER_START_TIMEOUT = 10.0  # seconds for a new launcher to open its FIFO
OUTSIDE = frozenset({"kill", "stop", "pause", "destroy"})  # engine events that are the platform's doing
EVENTS = OUTSIDE | {"die", "restart", "start"}
EVENT_SETTLE = 0.5  # seconds: see `health`
RESTART_EVERY = 5.0  # seconds between attempts to restart a launcher found gone


def _left_running(holder: dict[str, Any] | None, leader_start: int | None) -> str:
    """Feedback for a port held outside the new server's process group (`holder` None: by a hidden process)."""
    if holder is None:
        return (
            f"port {SERVER_PORT_IN_CONTAINER} is held by a process that cannot be inspected (it made itself "
            "non-dumpable) and is not in the process group that `bash run_server.sh` runs in, so the new "
            "server could not be told apart from it. Stop every server you start before you finish."
        )
    who = f"process {holder['pid']} (`{' '.join(str(holder['cmd']).split())[:120]}`)"
    if leader_start is not None and int(holder["start"]) < leader_start:
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


def _started(stamp: str) -> float:
    """Docker's RFC 3339 StartedAt (nanoseconds, Z) as a Unix time; 0 when absent or unparsable."""
    try:
        head, _, frac = stamp.rstrip("Z").partition(".")
        return datetime.fromisoformat(head + "+00:00").timestamp() + float(f"0.{frac or 0}")
    except ValueError:
        return 0.0


def judge(name: str, state: dict[str, Any], actions: set[str] | None) -> Loss:
    """Why a container that is not (or no longer the same) running is lost, from its state and the engine's
    lifecycle events since the attempt began (`actions`; None when the engine could not say).

    Only a stop the engine has on record as a `die` with no kill, stop, pause or removal from outside
    was ended from inside (`sandbox_exited`, the harness's side). Anything else is the platform's
    (`sandbox_lost`): a restart, an operator's kill, or a stop with no `die` on record, which is what a
    restart of the Docker engine itself leaves (its event log starts empty, and it stops every
    container on the way down when live-restore is off).
    """
    running = state.get("Running")
    what = "restarted" if running else f"stopped (exit {state.get('ExitCode')})"
    if actions is None:
        return Loss(kind="sandbox_lost", detail=f"container {name} was {what} (the engine's events could not be read)")
    outside = actions & OUTSIDE
    if outside:
        return Loss(kind="sandbox_lost", detail=f"container {name} was {what} by {', '.join(sorted(outside))}")
    if running:
        return Loss(kind="sandbox_lost", detail=f"container {name} was {what} by the engine")
    if "die" not in actions:
        return Loss(
            kind="sandbox_lost",
            detail=f"container {name} {what} with no record of it in the engine's "
            "events (the Docker engine restarted?)",
        )
    oom = ", out of memory" if state.get("OOMKilled") else ""
    return Loss(
        kind="sandbox_exited",
        detail=f"container {name} {what}{oom} with no kill from the engine "
        "or an operator: a process inside ended what kept it running",
    )


def _agent() -> str:
    return "{}:{}".format(*agent_ids())


def container_name(sweep: str, root: Path) -> str:
    """Readable (sweep and scenario directory) and unique per sandbox directory on the host."""
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:10]
    return "staminabench-" + re.sub(r"[^a-zA-Z0-9_.-]+", "-", f"{sweep}-{root.name}").strip("-")[:180] + "-" + digest


def agent_ids() -> tuple[int, int]:
    """Who the agent runs as: the image's `agent`, or the daemon's own ids when it cannot hand files over."""
    return (AGENT_UID, AGENT_UID) if os.getuid() == 0 else (os.getuid(), os.getgid())


def firewall(llm: tuple[str, int] | None) -> str:
    """iptables-restore input for a sandbox's namespace: replies and loopback; in, the server port; out, the gateway."""
    rules = [
        "*filter",
        ":INPUT DROP [0:0]",
        ":FORWARD DROP [0:0]",
        ":OUTPUT DROP [0:0]",
        "-A INPUT -i lo -j ACCEPT",
        "-A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT",
        f"-A INPUT -p tcp --dport {SERVER_PORT_IN_CONTAINER} -m conntrack --ctstate NEW -j ACCEPT",
        "-A OUTPUT -o lo -j ACCEPT",
        "-A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT",
    ]
    if llm is not None:
        rules.append(f"-A OUTPUT -p tcp -d {llm[0]} --dport {llm[1]} -m conntrack --ctstate NEW -j ACCEPT")
    return "\n".join([*rules, "COMMIT", ""])


def stage_layer(dest: Path, layer: tuple[str, ...]) -> None:
    """Make `dest` hold exactly the layer's files (paths below staminad/), updated in place.

    In place, because a running container (adopted after a daemon restart) has `dest` bind-mounted: a
    replaced directory would leave it looking at the deleted one.
    """
    dest.mkdir(parents=True, exist_ok=True)
    for rel in layer:
        target, data = dest / rel, (HARNESS_DIR / rel).read_bytes()
        if target.is_file() and target.read_bytes() == data:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".new")
        tmp.write_bytes(data)
        tmp.replace(target)
    wanted = {dest / rel for rel in layer}
    for path in sorted(dest.rglob("*"), reverse=True):  # files before their directories
        if path.is_dir() and not path.is_symlink():
            if not any(w.is_relative_to(path) for w in wanted):
                shutil.rmtree(path)
        elif path not in wanted:
            path.unlink()


class DockerSandbox(HostFiles):
    use_launcher = True  # False: every root-side operation by `docker exec` (the benchmarks' baseline)

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
        self.docker = docker
        self.root = root = root.resolve()
        self.host_workspace = root / "workspace"
        self.host_control = root / "control"
        self.host_layer = root / "layer"
        self.grant = grant
        self.image = grant.image or run.image  # each configuration's adapter may name its own layer
        self.quota_kb = QUOTA_KB
        self.llm = llm if grant.llm else None  # (address, port) of the gateway this sandbox may reach
        self.paths = SandboxPaths("/workspace", "/stamina", "/harness")
        self.sweep, self.label, self.run, self.ports = sweep, label, run, ports
        self.name = container_name(sweep, root)
        self.port: int | None = None
        self.creations = creations or anyio.CapacityLimiter(1)
        self.llm_host = "127.0.0.1"
        self.channel = Channel(self.host_control)
        self._launcher_started = -RESTART_EVERY  # monotonic time a launcher found gone was last restarted

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

    def _host_dirs(self) -> None:
        """Workspace for the agent; control and layer for the root side (the agent reads only the prompts)."""
        uid, gid = agent_ids()
        for d in (
            self.host_workspace,
            self.host_workspace / ".home",
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
        if os.getuid() == 0:
            for d in (self.host_workspace, self.host_workspace / ".home"):
                os.chown(d, uid, gid)
        else:
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

    def _hand_over(self) -> None:
        """Give the agent the files the engine wrote into its workspace (README, spec), so it may edit them."""
        if os.getuid() != 0:
            return  # the agent runs as the daemon's user: they are its own already
        uid, gid = agent_ids()
        with os.scandir(self.host_workspace) as entries:
            for entry in entries:
                if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == 0:
                    os.chown(entry.path, uid, gid, follow_symlinks=False)

    def _config(self) -> dict[str, Any]:
        memory = self.run.memory_mb * 1024 * 1024
        return {
            "Image": self.image,
            "Cmd": _KEEPALIVE,
            # Root's keepalive only: Docker gives an exec the capabilities of the container's user, and the root
            # side needs SETUID/SETGID/KILL; every process of the agent runs as the agent (setpriv), with none.
            "User": ROOT,
            "WorkingDir": "/workspace",
            "Env": ["HOME=/workspace/.home", "TMPDIR=/tmp"],
            "Labels": {LABEL_SWEEP: self.sweep, LABEL_SCENARIO: self.label, LABEL_SANDBOXES: str(self.root.parent)},
            "ExposedPorts": {f"{SERVER_PORT_IN_CONTAINER}/tcp": {}},
            "HostConfig": {
                "Binds": [
                    f"{self.host_workspace}:/workspace",
                    f"{self.host_control}/prompts:/stamina/prompts:ro",
                    f"{self.host_control}:{CONTROL}",
                    f"{self.host_layer}:/harness:ro",
                ],
                "Tmpfs": {"/tmp": f"rw,nosuid,nodev,size={TMP_MB}m,mode=1777"},
                "ReadonlyRootfs": True,
                "PortBindings": {
                    f"{SERVER_PORT_IN_CONTAINER}/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(self.port)}]
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
            "Labels": {LABEL_SWEEP: self.sweep, LABEL_SCENARIO: self.label, LABEL_SANDBOXES: str(self.root.parent)},
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

    async def prepare(self) -> None:
        """Create (or recreate after a loss) and start the scenario's container, sealed."""
        self._host_dirs()
        await ensure_network(self.docker)
        container = await self._container()
        if container is None:
            self.port = self.ports.allocate()
            config = self._config()
            try:
                async with self.creations:
                    with anyio.fail_after(OP_TIMEOUT):
                        container = await self.docker.containers.create(config=config, name=self.name)
            except aiodocker.exceptions.DockerError as exc:
                self.ports.release(self.port)
                raise SandboxError(f"cannot create container {self.name}: {exc.message}") from None
        else:
            info = container._container
            if "NetworkSettings" not in info:
                info = await container.show()
            binding = (info.get("HostConfig", {}).get("PortBindings") or {}).get(f"{SERVER_PORT_IN_CONTAINER}/tcp")
            self.port = int(binding[0]["HostPort"]) if binding else None
            if self.port is not None:
                self.ports.held.add(self.port)
        try:
            with anyio.fail_after(OP_TIMEOUT):
                info = await container.show()
                if not info["State"]["Running"]:
                    await container.start()
        except (aiodocker.exceptions.DockerError, TimeoutError, aiohttp.ClientError, OSError) as exc:
            # Say a program outside took the published port meanwhile: this container can never start, so
            # it goes, and the retry's `prepare` creates one on a fresh port.
            with anyio.CancelScope(shield=True), contextlib.suppress(aiodocker.exceptions.DockerError, TimeoutError):
                with anyio.fail_after(OP_TIMEOUT):
                    await container.delete(force=True)
            if self.port is not None:
                self.ports.release(self.port)
            message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            kind = "port_taken" if "address already in use" in str(message) else "engine_error"
            raise SandboxError(f"cannot start container {self.name}: {message}", kind) from None
        await self._seal(container)  # idempotent: iptables-restore replaces the whole table
        await self._ensure_launcher()

    async def _ensure_launcher(self) -> None:
        """Start the container's launcher unless one reads its FIFO (say, adopted after a daemon restart)."""
        if self.channel.reading() or not self.use_launcher:
            return
        await self._start_launcher()
        with anyio.move_on_after(LAUNCHER_START_TIMEOUT):
            while not self.channel.reading():
                await anyio.sleep(0.005)  # the launcher opens its FIFO first thing; nothing to await instead
        # Without one every operation still works, by `docker exec`; the next operation tries again.

    async def _start_launcher(self) -> None:
        await self._exec(["setsid", "-f", "python3", "-I", "-S", LAUNCHER, "serve", CONTROL], detach=True)

    async def _usable(self) -> None:
        """Raise SandboxError (`sandbox_lost`) unless the container runs and is not paused."""
        container = await self._container()
        state = (container._container.get("State") or {}) if container is not None else {}
        if container is None or state.get("Paused") or not state.get("Running"):
            what = "gone" if container is None else "paused" if state.get("Paused") else "not running"
            raise SandboxError(f"container {self.name} is {what}")

    async def _op(self, op: str, args: dict[str, Any], timeout: float = OP_TIMEOUT) -> dict[str, Any]:
        """One root-side operation (see `launcher`): through the container's launcher, or, when none reads
        its FIFO, once by `docker exec` of the same code (and a new launcher is started for what follows)."""
        if op == "spawn":
            if self.channel.post(op, args):
                return {}
        else:
            answer = await self.channel.call(op, args, timeout, self._usable)
            if answer is not None:
                return answer
        code, out = await self._run(["python3", "-I", "-S", LAUNCHER, "once", op, json.dumps(args)], timeout=timeout)
        try:
            found = json.loads(out) if op != "spawn" else {"ok": {}}
        except ValueError:
            found = None
        if code != 0 or not isinstance(found, dict) or not isinstance(found.get("ok"), dict):
            raise SandboxError(f"{op} failed in {self.name} (exit {code}): {out[:200]!r}", "engine_error")
        if self.use_launcher and time.monotonic() - self._launcher_started >= RESTART_EVERY:  # one per RESTART_EVERY
            self._launcher_started = time.monotonic()
            with contextlib.suppress(SandboxError):
                await self._start_launcher()
        return dict(found["ok"])

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
            kind = "sandbox_lost" if exc.status in (404, 409) else "engine_error"
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

    async def launch(self, job_id: str, argv: list[str], env: dict[str, str]) -> None:
        job = write_job(self.host_control, self.paths, job_id, argv, env)
        if os.getuid() != 0:
            job.chmod(0o777)  # the root side inside writes the pid and log here (see `_host_dirs`)
        self._hand_over()
        await self._op(
            "spawn",
            {
                "argv": [
                    "sh",
                    "/harness/sandbox/wrapper.sh",
                    f"{CONTROL}/jobs/{job_id}",
                    f"{CONTROL}/markers/{job_id}.json",
                    _agent(),
                    str(self.quota_kb),
                    "/workspace",
                ]
            },
        )

    async def _pid(self, job_id: str) -> int | None:
        return read_int(self.host_control / "jobs" / job_id / "pid")

    async def job_alive(self, job_id: str) -> bool:
        pid = await self._pid(job_id)
        if pid is None:
            return False
        try:
            return bool((await self._op("alive", {"pgid": pid}))["alive"])
        except SandboxError:
            if await self._container() is None:
                return False  # the container is gone, and the job with it
            raise  # paused, or the engine failing: not the job's doing

    async def kill_job(self, job_id: str) -> None:
        pid = await self._pid(job_id)
        if pid is not None and await self._container() is not None:
            await self._op("kill", {"pgid": pid})

    async def _server_pgid(self) -> int | None:
        return read_int(self.host_control / "server.pid")

    async def _server_exited(self) -> bool:
        return (self.host_control / "server.exit").exists()

    async def _clear_server_files(self) -> None:
        for name in ("server.pid", "server.exit"):
            (self.host_control / name).unlink(missing_ok=True)

    def _server_url(self, port: int) -> str:
        return f"http://127.0.0.1:{port}"

    async def _listeners(self, leader: int) -> dict[str, Any]:
        """What holds the server port inside the container, read as the agent (see `launcher`)."""
        return await self._op("listeners", {"port": SERVER_PORT_IN_CONTAINER, "leader": leader, "as": _agent()})

    async def start_server(self, timeout: float, request_timeout: float = 5.0) -> ServerHandle:
        """Start `bash run_server.sh` in its own process group and wait until it answers.

        The port inside is fixed, so whatever answers there is checked to be the server just started:
        every process holding the listening socket must be in the new server's process group. An earlier
        server (or a child it detached) still holding the port is the agent's failure, `server_left_running`.
        """
        if await self._server_pgid() is not None:  # left running by a daemon killed mid-suite
            await self.stop_server(ServerHandle(url="", port=self.port or 0))
        await self._clear_server_files()
        if self.port is None:
            raise SandboxError("the container has no published server port")
        started = time.time()
        await self._op(
            "spawn", {"argv": ["sh", "/harness/sandbox/server.sh", CONTROL, str(SERVER_PORT_IN_CONTAINER), _agent()]}
        )
        with anyio.move_on_after(PID_TIMEOUT):
            while await self._server_pgid() is None:
                await anyio.sleep(0.01)  # the detached shell writes its pid first thing; nothing to await instead
        pgid = await self._server_pgid()
        if pgid is None:
            raise SandboxError(
                f"the server start command did not run in {self.name} within {PID_TIMEOUT:.0f} s", "engine_error"
            )
        handle = ServerHandle(url=self._server_url(self.port), port=self.port, pgid=pgid)
        checked = [time.monotonic()]

        async def running() -> bool:
            if time.monotonic() - checked[0] >= HEALTH_INTERVAL:  # a gone container never answers: say so now
                checked[0] = time.monotonic()
                loss = await self.health(started)
                if loss is not None and not loss.paused:
                    raise SandboxError(loss.detail, loss.kind)
            return not await self._server_exited()

        async def listening() -> bool:
            return bool((await self._listeners(0))["sockets"])

        try:
            await wait_ready(handle.url, timeout, running, request_timeout, listening)
            found = await self._listeners(pgid)
            strangers = [h for h in found["holders"] if h["pgid"] != pgid]
            if strangers or found.get("unseen"):
                raise NotReady(
                    "server_left_running", _left_running(strangers[0] if strangers else None, found.get("leader_start"))
                )
        except BaseException:
            with anyio.CancelScope(shield=True), contextlib.suppress(SandboxError):
                await self.stop_server(handle)
            raise
        return handle

    async def stop_server(self, handle: ServerHandle) -> None:
        """TERM then KILL the server's process group, then whatever still holds the server port (a process
        the server or the harness detached); wait until nothing listens there."""
        pgid = await self._server_pgid()
        if pgid is None:
            return
        await self._op("stop", {"pgid": pgid, "port": SERVER_PORT_IN_CONTAINER, "as": _agent()}, timeout=30)
        await self._clear_server_files()

    async def close(self) -> None:
        """Remove the container (the workspace stays on the host; `prepare` recreates it on resume)."""
        container = await self._container()
        if container is not None:
            try:
                with anyio.fail_after(OP_TIMEOUT):
                    await container.delete(force=True)
            except aiodocker.exceptions.DockerError as exc:
                if exc.status != 404:
                    raise SandboxError(f"cannot remove {self.name}: {exc.message}") from None
        if self.port is not None:
            self.ports.release(self.port)
        for name in ("server.pid", "server.exit"):  # pids of a removed container mean nothing in the next one
            (self.host_control / name).unlink(missing_ok=True)


_network_lock: dict[int, anyio.Lock] = {}


async def ensure_network(docker: aiodocker.Docker) -> None:
    """Create the project's bridge network once (Docker allows duplicate names, so creation is serialised)."""
    lock = _network_lock.setdefault(id(docker), anyio.Lock())
    async with lock:
        with anyio.fail_after(OP_TIMEOUT):
            found = await docker.networks.list(filters={"name": [NETWORK]})
        exact = sorted((n for n in found if n["Name"] == NETWORK), key=lambda n: n.get("Created", ""))
        for extra in exact[1:]:  # left by an older, unserialised run
            with anyio.fail_after(OP_TIMEOUT):
                await (await docker.networks.get(extra["Id"])).delete()
        if exact:
            return
        try:
            with anyio.fail_after(OP_TIMEOUT):
                await docker.networks.create(
                    {
                        "Name": NETWORK,
                        "Driver": "bridge",
                        "CheckDuplicate": True,
                        "Labels": {LABEL_SWEEP: "shared"},
                        "Options": {"com.docker.network.bridge.enable_icc": "false"},
                    }
                )
        except aiodocker.exceptions.DockerError as exc:
            if exc.status != 409:
                raise SandboxError(f"cannot create network {NETWORK}: {exc.message}") from None


async def reap(docker: aiodocker.Docker, sandboxes: Path, keep: set[str] | None = None) -> list[str]:
    """Remove the containers of one sweep's sandbox directory that belong to no live scenario (`keep`)."""
    label = f"{LABEL_SANDBOXES}={sandboxes}"
    removed = []
    with anyio.fail_after(OP_TIMEOUT):
        containers = await docker.containers.list(all=True, filters={"label": [label]})
    for c in containers:
        name = c._container.get("Names", ["?"])[0].lstrip("/")
        if keep and name in keep:
            continue
        with anyio.fail_after(OP_TIMEOUT):
            await c.delete(force=True)
        removed.append(name)
    return removed


class DockerFactory:
    """Sandboxes sharing one aiodocker client, created lazily inside the running event loop."""

    def __init__(self, run: ContainerSettings, ports: PortAllocator) -> None:
        self.run, self.ports = run, ports
        self.connect: Callable[[], aiodocker.Docker] = aiodocker.Docker  # how to reach the engine
        self._client: aiodocker.Docker | None = None
        self.creations = anyio.CapacityLimiter(4)  # container creations at once: the engine serialises them anyway
        self.bridge_ip = ""  # the host's address on the project's network (where the LLM gateway listens)
        self.llm_port: int | None = None  # the gateway's port, once it serves

    def __call__(self, root: Path, label: str, grant: Grant = Grant()) -> DockerSandbox:  # noqa: B008 - frozen
        if self._client is None:
            self._client = self.connect()
        llm = (self.bridge_ip, self.llm_port) if self.bridge_ip and self.llm_port else None
        sandbox = DockerSandbox(
            self._client, root, root.parent.name, label, self.run, self.ports, self.creations, grant, llm
        )
        sandbox.llm_host = self.bridge_ip or "127.0.0.1"
        return sandbox

    def llm_serving(self, port: int) -> None:
        """The gateway serves on `port` (on `bridge_ip`): the one destination granted sandboxes may reach."""
        self.llm_port = port

    async def llm_hosts(self) -> list[str]:
        """Addresses the gateway must listen on so containers reach it: the host side of our own network."""
        if self._client is None:
            self._client = self.connect()
        await ensure_network(self._client)
        with anyio.fail_after(OP_TIMEOUT):
            info = await (await self._client.networks.get(NETWORK)).show()
        configs = (info.get("IPAM") or {}).get("Config") or []
        self.bridge_ip = next((c["Gateway"] for c in configs if c.get("Gateway") and ":" not in c["Gateway"]), "")
        return [self.bridge_ip] if self.bridge_ip else []

    async def aclose(self, sandboxes: Path) -> None:
        """Remove whatever container of the sweep (its sandbox directory) is left, then close the client."""
        client, self._client = self._client or self.connect(), None
        try:
            await reap(client, sandboxes.resolve())
        finally:
            await client.close()


def docker_factory(run: ContainerSettings, ports: PortAllocator) -> SandboxFactory:
    return DockerFactory(run, ports)
