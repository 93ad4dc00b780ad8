"""What every container sandbox shares, whichever way its files reach it: names, labels and limits, the
firewall of its network namespace, how a loss is judged from the engine's state and events, the
project's network and the reaper that removes a sweep's containers by label.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import socket
import weakref
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import aiodocker
import anyio

from staminad.sandbox.base import SERVER_PORT_IN_CONTAINER, Loss, SandboxError
from staminad.sandbox.docker.engineconnect import client_watch
from staminad.sandbox.docker.image import AGENT_UID, PRIVATE_DIR
from staminad.sandbox.outage import EngineWatch
from staminad.sandbox.settings import ContainerSettings

log = logging.getLogger(__name__)
LABEL_SWEEP = "staminabench.sweep"
LABEL_SCENARIO = "staminabench.scenario"
LABEL_SANDBOXES = "staminabench.sandboxes"  # the sweep's sandbox directory on the host: whose container it is
LABEL_STATE = "staminabench.state"  # the state directory that owns it (`orphans`: gone, or not knowing it)
LABEL_HOST = "staminabench.host"  # the machine that state directory is on (`host_id`)
NETWORK = "staminabench-sealed"  # ICC off; the older `staminabench` network (ICC on) is no longer used
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
LAUNCHER = "/harness/sandbox/inside/launcher.py"
OUTSIDE = frozenset({"kill", "stop", "pause", "destroy"})  # engine events that are the platform's doing
EVENTS = OUTSIDE | {"die", "restart", "start"}
EVENT_SETTLE = 0.5  # seconds: see `health`


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


def host_id() -> str:
    """This machine, as a sandbox's labels name it: its hostname and, where it has one, its machine id.

    Another machine (or container) on the same engine has another: its state directories are not ours to look at.
    """
    try:
        machine = Path("/etc/machine-id").read_text().strip()
    except OSError:
        machine = ""
    return f"{socket.gethostname()}/{machine}" if machine else socket.gethostname()


def ownership(root: Path) -> dict[str, str]:
    """The labels that say whose the sandbox at `root` is: its sweep's sandbox directory, and, for a root in a
    state directory's layout (<state>/sandboxes/<sweep>/<scenario>), that state directory and its machine."""
    if len(root.parents) < 3 or root.parents[1].name != "sandboxes":
        return {LABEL_SANDBOXES: str(root.parent)}
    return {LABEL_SANDBOXES: str(root.parent), LABEL_STATE: str(root.parents[2]), LABEL_HOST: host_id()}


def _agent() -> str:
    return "{}:{}".format(*agent_ids())


def container_name(sweep: str, root: Path) -> str:
    """Readable (sweep and scenario directory) and unique per sandbox directory on the host."""
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:10]
    return "staminabench-" + re.sub(r"[^a-zA-Z0-9_.-]+", "-", f"{sweep}-{root.name}").strip("-")[:180] + "-" + digest


def agent_ids() -> tuple[int, int]:
    """Who the agent runs as: the image's `agent`, or the daemon's own ids when it cannot hand files over."""
    return (AGENT_UID, AGENT_UID) if os.getuid() == 0 else (os.getuid(), os.getgid())


DOCKER_DNS = "127.0.0.11"  # the engine's resolver in a container on a user-defined network


def firewall(llm: tuple[str, int] | None) -> str:
    """iptables-restore input for a sandbox's namespace: replies and loopback; in, the server port; out, the gateway.

    Docker's embedded DNS answers on 127.0.0.11 inside the namespace and forwards names it does not know to the
    host's resolvers: loopback but for it, or every query would be a way out (DNS tunnelling)."""
    rules = [
        "*filter",
        ":INPUT DROP [0:0]",
        ":FORWARD DROP [0:0]",
        ":OUTPUT DROP [0:0]",
        "-A INPUT -i lo -j ACCEPT",
        "-A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT",
        f"-A INPUT -p tcp --dport {SERVER_PORT_IN_CONTAINER} -m conntrack --ctstate NEW -j ACCEPT",
        f"-A OUTPUT -d {DOCKER_DNS} -j DROP",
        "-A OUTPUT -o lo -j ACCEPT",
        "-A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT",
    ]
    if llm is not None:
        rules.append(f"-A OUTPUT -p tcp -d {llm[0]} --dport {llm[1]} -m conntrack --ctstate NEW -j ACCEPT")
    return "\n".join([*rules, "COMMIT", ""])


_network_lock: dict[int, anyio.Lock] = {}
_network_seen: weakref.WeakSet[aiodocker.Docker] = weakref.WeakSet()  # clients whose engine has the network


SEALS_AT_ONCE = 16  # per engine client: each holds two of its connections (aiohttp's pool: 100) while it runs
_seal_slots: weakref.WeakKeyDictionary[aiodocker.Docker, anyio.Semaphore] = weakref.WeakKeyDictionary()


def seal_slots(docker: aiodocker.Docker) -> anyio.Semaphore:
    """The client's bound on network seals at once (`SEALS_AT_ONCE`), made on first use."""
    slots = _seal_slots.get(docker)
    if slots is None:
        slots = _seal_slots[docker] = anyio.Semaphore(SEALS_AT_ONCE)
    return slots


def network_gone(exc: aiodocker.exceptions.DockerError) -> bool:
    """Whether an engine's refusal says the project's network is missing (removed from outside, say)."""
    return exc.status == 404 and "network" in str(exc.message).lower()


def forget_network(docker: aiodocker.Docker) -> None:
    """The engine said the network is gone: the next `ensure_network` looks again (and makes it)."""
    _network_seen.discard(docker)


async def ensure_network(docker: aiodocker.Docker) -> None:
    """Create the project's bridge network once (Docker allows duplicate names, so creation is serialised).

    Looked up once per client: every prepare calls this, and a listing costs an engine round trip; a create or
    start the engine refuses for want of the network calls `forget_network`, so the next call looks again.
    """
    if docker in _network_seen:
        return
    lock = _network_lock.setdefault(id(docker), anyio.Lock())
    async with lock:
        if docker in _network_seen:
            return
        await _ensure_network(docker)
        _network_seen.add(docker)


async def _ensure_network(docker: aiodocker.Docker) -> None:
    """List the network, remove duplicates an older run left, make it when missing."""
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
        try:
            with anyio.fail_after(OP_TIMEOUT):
                await c.delete(force=True)
        except aiodocker.exceptions.DockerError as exc:
            if exc.status != 404:  # gone meanwhile is removed; anything else must not stop the rest being reaped
                log.warning("cannot remove container %s: %s", name, exc.message)
            continue
        removed.append(name)
    return removed


async def reap_volumes(docker: aiodocker.Docker, sandboxes: Path) -> list[str]:
    """Remove the volumes of one sweep's sandbox directory (its containers must be gone first)."""
    volumes: Any = docker.volumes  # aiodocker's volume calls are untyped
    with anyio.fail_after(OP_TIMEOUT):
        found = await volumes.list(filters={"label": [f"{LABEL_SANDBOXES}={sandboxes}"]})
    removed = []
    for v in found.get("Volumes") or []:
        with anyio.fail_after(OP_TIMEOUT), contextlib.suppress(aiodocker.exceptions.DockerError):
            await (await volumes.get(v["Name"])).delete()
            removed.append(v["Name"])
    return removed


class ContainerFactory:
    """What every container runtime's factory shares: its engine client (made lazily, inside the event loop,
    by `connect`) and the LLM gateway's address on the project's network of that engine."""

    def __init__(self, run: ContainerSettings, connect: Callable[[], aiodocker.Docker] = aiodocker.Docker) -> None:
        self.run, self.connect = run, connect
        self._client: aiodocker.Docker | None = None
        self.creations = anyio.CapacityLimiter(4)  # container creations at once: the engine serialises them anyway
        self.bridge_ip = ""  # the host's address on the project's network (where the LLM gateway listens)
        self.llm_port: int | None = None  # the gateway's port, once it serves

    def client(self) -> aiodocker.Docker:
        if self._client is None:
            self._client = self.connect()
        return self._client

    def watch(self) -> EngineWatch | None:
        """The outage watch of its engine, once it has spoken to it (`staminad.sandbox.outage`)."""
        return client_watch(self._client) if self._client is not None else None

    async def disconnect(self) -> None:
        """Close the engine connection and leave every container running (a graceful daemon stop)."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def llm(self) -> tuple[str, int] | None:
        """Where granted sandboxes reach the gateway, once it serves."""
        return (self.bridge_ip, self.llm_port) if self.bridge_ip and self.llm_port else None

    def llm_serving(self, port: int) -> None:
        """The gateway serves on `port` (on `bridge_ip`): the one destination granted sandboxes may reach."""
        self.llm_port = port

    async def llm_hosts(self) -> list[str]:
        """Addresses the gateway must listen on so containers reach it: the host side of our own network."""
        client = self.client()
        await ensure_network(client)
        with anyio.fail_after(OP_TIMEOUT):
            info = await (await client.networks.get(NETWORK)).show()
        configs = (info.get("IPAM") or {}).get("Config") or []
        self.bridge_ip = next((c["Gateway"] for c in configs if c.get("Gateway") and ":" not in c["Gateway"]), "")
        return [self.bridge_ip] if self.bridge_ip else []
