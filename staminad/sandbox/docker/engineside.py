"""The engine's side of a sealed container: its create request, network seal, state, events and statistics.

`EngineContainer` is what the engine sees of one scenario's container, the same for every Docker sandbox
(`sealed.SealedContainer` builds the launcher's side on it): the container's limits and capabilities
(`_config`), the firewall loaded by a helper before the agent runs (`_seal`), commands run in it by
`docker exec` (`_run`); the judgement of a lost or paused container from the engine's state and events
(`health`, `frozen`) and whether its own processes exhausted its limits (`exhausted`) are `record`'s.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import aiodocker
import aiohttp
import anyio

from protocol.kinds import InfraKind
from staminad.sandbox.base import (
    SERVER_PORT_IN_CONTAINER,
    Grant,
    InsideFailure,
    SandboxError,
    SandboxPaths,
)
from staminad.sandbox.docker.container import (
    _KEEPALIVE,
    FSIZE,
    LABEL_SCENARIO,
    LABEL_SWEEP,
    NETWORK,
    OP_TIMEOUT,
    OUTPUT_LIMIT,
    QUOTA_KB,
    ROOT,
    TMP_MB,
    container_name,
    ensure_network,
    firewall,
    forget_network,
    network_gone,
    ownership,
    seal_slots,
)
from staminad.sandbox.docker.record import EngineRecord
from staminad.sandbox.settings import ContainerSettings

# What the engine says when an exec could not be started for want of the container's processes or memory, which
# the agent's processes compete for: judged as such (`InsideFailure`), never as the engine's failure.
SCARCE = ("resource temporarily unavailable", "cannot allocate memory", "no space left on device", "pids limit")


class EngineContainer(EngineRecord):
    """One scenario's labelled, sealed container as its engine sees it (see the module docstring)."""

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
        self.own_nothing()

    def _labels(self) -> dict[str, str]:
        return {LABEL_SWEEP: self.sweep, LABEL_SCENARIO: self.label, **ownership(self.root)}  # whose (`orphans`)

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

    def _seal_config(self, container: Any) -> dict[str, Any]:
        """The seal helper's create request: the container's namespace, NET_ADMIN alone, removed once it exits."""
        return {
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
                "AutoRemove": True,
            },
        }

    async def seal_helper(self, container: Any) -> Any:
        """A seal helper for `container`, made (not started) while the container starts; None when the engine
        refused (then `_seal` makes one, and says why it cannot)."""
        try:
            with anyio.fail_after(OP_TIMEOUT):
                return await self._create_helper(self._seal_config(container), f"{self.name}-seal")
        except (aiodocker.exceptions.DockerError, TimeoutError, aiohttp.ClientError, OSError):
            return None

    async def _start_beside_helper(self, container: Any) -> Any:
        """Start the new container while its seal's helper is made (None if the engine refused: `_seal` makes
        it then). A start that fails removes the helper and raises as itself."""
        made: list[Any] = []

        async def make() -> None:
            made.append(await self.seal_helper(container))

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(make)
                try:
                    await container.start()
                except BaseException:
                    tg.cancel_scope.cancel()
                    raise
        except BaseException as exc:
            if made and made[0] is not None:
                with (
                    anyio.CancelScope(shield=True),
                    anyio.move_on_after(OP_TIMEOUT),
                    contextlib.suppress(aiodocker.exceptions.DockerError),
                ):
                    await made[0].delete(force=True)
            if isinstance(exc, BaseExceptionGroup):  # the start's failure alone (`make` raises nothing)
                raise exc.exceptions[0] from None
            raise
        return made[0] if made else None

    async def _create(self, config: dict[str, Any]) -> Any:
        """The container, made once more after making the network again when the engine says it is gone."""
        for attempt in (1, 2):
            try:
                with anyio.fail_after(OP_TIMEOUT):
                    return await self.docker.containers.create(config=config, name=self.name)
            except aiodocker.exceptions.DockerError as exc:
                if attempt == 2 or not network_gone(exc):
                    raise
            forget_network(self.docker)
            await ensure_network(self.docker)
        raise AssertionError("unreachable")

    async def _seal(self, container: Any, helper: Any = None) -> None:
        """Load the firewall into the container's network namespace before any agent process runs.

        A short-lived helper container joins the namespace with NET_ADMIN alone and runs iptables-restore;
        the sandbox container itself never holds NET_ADMIN, so the agent cannot undo the rules. The engine
        removes the helper itself once it exits (AutoRemove), off the ready path: the wait for its exit is
        registered before it starts, so its status is never lost to the removal. A helper left behind by a
        daemon or engine killed meanwhile carries the sweep's labels, so the reaper removes it; the next
        seal of this container replaces it by name. A seal that fails waits for its helper to be gone.
        `helper`: one `seal_helper` made already (beside the container's start), else one is made here.
        """
        try:
            with anyio.fail_after(OP_TIMEOUT):
                helper = helper or await self._create_helper(self._seal_config(container), f"{self.name}-seal")
                wait = f"containers/{helper.id}/wait"
                # The engine answers the wait's headers once it is registered, its status when the helper exits.
                started = False
                try:
                    # The wait holds one of the client's connections while the start takes another: a bound on
                    # seals at once per client keeps them from taking every connection and stalling each other.
                    async with (
                        seal_slots(self.docker),
                        self.docker._query(wait, "POST", params={"condition": "next-exit"}, timeout=None) as ex,
                    ):
                        try:
                            await helper.start()
                            started = True
                            code = (await ex.json()).get("StatusCode")
                        finally:
                            ex.close()  # aiodocker's `_query` leaves releasing the response to its caller
                except BaseException:
                    if not started:  # never started (failed, or cancelled): AutoRemove does not apply
                        with (
                            anyio.CancelScope(shield=True),
                            anyio.move_on_after(OP_TIMEOUT),
                            contextlib.suppress(aiodocker.exceptions.DockerError),
                        ):
                            await helper.delete(force=True)
                    raise
                if code != 0:
                    await self._helper_gone(helper.id)
                    raise SandboxError(f"cannot seal the network of {self.name}: iptables-restore exited {code}")
        except aiodocker.exceptions.DockerError as exc:
            raise SandboxError(f"cannot seal the network of {self.name}: {exc.message}") from None
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise SandboxError(f"cannot seal the network of {self.name}: {type(exc).__name__}: {exc}") from None

    async def _create_helper(self, config: dict[str, Any], name: str) -> Any:
        """The helper container under `name`, replacing one left there (by a daemon killed while sealing, or
        one the engine is still removing)."""
        try:
            return await self.docker.containers.create(config=config, name=name)
        except aiodocker.exceptions.DockerError as exc:
            if exc.status != 409:
                raise
        with contextlib.suppress(aiodocker.exceptions.DockerError):
            await (await self.docker.containers.get(name)).delete(force=True)
        await self._helper_gone(name)
        return await self.docker.containers.create(config=config, name=name)

    async def _helper_gone(self, ref: str) -> None:
        """Wait until the engine has removed the helper `ref` (an id or a name)."""
        with contextlib.suppress(aiodocker.exceptions.DockerError):
            params = {"condition": "removed"}
            async with self.docker._query(f"containers/{ref}/wait", "POST", params=params, timeout=None) as r:
                await r.read()

    async def _usable(self) -> None:
        """Raise SandboxError (`sandbox_lost`) unless the container runs and is not paused."""
        container = await self._container()
        state = (container._container.get("State") or {}) if container is not None else {}
        if container is None or state.get("Paused") or not state.get("Running"):
            what = "gone" if container is None else "paused" if state.get("Paused") else "not running"
            raise SandboxError(f"container {self.name} is {what}")

    def _mounts(self) -> dict[str, Any]:
        """The HostConfig entries that give the container its workspace, control, layer and prompts."""
        raise NotImplementedError

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
            # 404: removed; 409: paused or not running. Anything else is the engine failing, unless it could not
            # start the command for want of the container's processes or memory (judged: `InsideFailure`).
            if any(s in str(exc.message).lower() for s in SCARCE):
                raise InsideFailure(f"docker exec in {self.name}: {exc.message}") from None
            kind: InfraKind = "sandbox_lost" if exc.status in (404, 409) else "engine_error"
            raise SandboxError(f"docker exec in {self.name}: {exc.message}", kind) from None
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise SandboxError(f"docker exec in {self.name}: {type(exc).__name__}: {exc}", "engine_error") from None
