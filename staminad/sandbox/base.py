"""The sandbox interface the engine drives, and the job files every runtime shares.

A job is one harness run: `control/jobs/<id>/cmd` holds the command, the wrapper records its
pid and log there and writes `control/markers/<id>.json` when it ends. Paths an agent adapter
uses are the sandbox-side ones (`SandboxPaths`): the host workspace for `local`, `/workspace`
inside a container.

The engine reaches a sandbox's files only through the `Sandbox` operations (seed, put_prompt,
job_state, wait_marker, count_loc, server_log, snapshot, restore, keep_code), never through a host path, so
a sandbox whose files live on another machine's Docker engine (`docker.volumesandbox`) is driven like one on the
daemon's disk (`local`, the bind-mounted `docker`). Only manual mode needs the files on the
daemon's disk (`Sandbox.host_files`).

`Sandbox` is what the engine drives (23 members), not what a new runtime writes: a runtime on this machine writes
the narrow seam `seam.Box` (7 members: paths, describe, open, enclose, end, holds, health), and `boxed.BoxedSandbox`
provides all of `Sandbox` on top of it by composition (`bwrap/` is built so). `local` and `docker` implement
`Sandbox` directly; `seam` says how they map onto the seam.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from protocol.kinds import InfraKind, ServerKind
from staminad.sandbox.markers import Marker, MarkerWatcher

if TYPE_CHECKING:
    from staminad.sandbox.outage import EngineWatch

HARNESS_DIR = Path(__file__).parents[1]  # staminad/: what a layer stages, by paths relative to it
WRAPPER = HARNESS_DIR / "sandbox" / "inside" / "wrapper.sh"
SERVER_PORT_IN_CONTAINER = 18080


class SandboxError(RuntimeError):
    """The sandbox itself failed: a platform fault (see `engine.outcome.PLATFORM_KINDS`), never the agent's.

    `kind`: `sandbox_lost` (the container is gone, stopped or paused), `engine_error` (the engine
    refused or failed an operation), `port_taken` (a program outside the sandbox holds the port).
    """

    def __init__(self, message: str, kind: InfraKind = "sandbox_lost") -> None:
        super().__init__(message)
        self.kind = kind


class InsideFailure(SandboxError):
    """An operation of the runtime's that failed inside the sandbox, where the agent's processes run and compete
    with it for the sandbox's processes, memory and CPU: the in-container launcher late, out of a resource, or a
    command it started that did not run. Raised as an `engine_error`, it is judged before it is blamed: a step
    the agent's processes could have influenced is the agent's failure unless the engine's own record shows the
    platform failed (see `docker.sealed.SealedContainer.start_server`).
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, "engine_error")


class Loss(msgspec.Struct, frozen=True, kw_only=True):
    """Why a sandbox is not usable now. `kind` is an infra kind: `sandbox_lost` for the platform's doing,
    `sandbox_exited` when it ended from inside (the agent killed what keeps it alive)."""

    kind: InfraKind
    detail: str
    paused: bool = False  # frozen by the engine or an operator: it may come back


class SandboxPaths(msgspec.Struct, frozen=True):
    """Where things are, as seen from inside the sandbox."""

    workspace: str
    control: str
    harness: str


# What every sandbox's layer carries (below staminad/): the runtime's own in-container programs.
RUNTIME_FILES = (
    "sandbox/inside/wrapper.sh",
    "sandbox/inside/server.sh",
    "sandbox/inside/launcher.py",
    "sandbox/inside/pgroups.py",
    "sandbox/inside/listening.py",
    "sandbox/inside/logcap.py",
    "sandbox/inside/quota.py",
)


class Grant(msgspec.Struct, frozen=True, kw_only=True):
    """What one scenario's sandbox is given besides its workspace: its agent's files and its network reach."""

    layer: tuple[str, ...] = RUNTIME_FILES  # files below staminad/, mounted read-only
    llm: bool = False  # may reach the sweep's LLM gateway (a real harness); nothing else is ever reachable
    image: str = ""  # the image its agent's adapter names (a harness layer); "" runs the sweep's [run] image


class ServerHandle(msgspec.Struct, kw_only=True):
    url: str
    pgid: int | None = None
    port: int = 0


class JobState(msgspec.Struct, frozen=True, kw_only=True):
    """Where one job stands in its sandbox: its command written, its wrapper started, its marker."""

    written: bool  # the job's command (or, in manual mode, its directory) is in the sandbox
    started: bool  # the wrapper recorded its pid: the harness was started
    marker: Marker | None  # what the wrapper wrote when the harness ended (None while it runs)


class HostView(msgspec.Struct, frozen=True, kw_only=True):
    """A sandbox's files on the daemon's own disk (what manual mode hands to a person)."""

    workspace: Path
    control: Path


SNAPSHOT_LIMIT = 256 << 20  # bytes of workspace archive past which a snapshot is skipped, not taken


class Snapshot(msgspec.Struct, frozen=True, kw_only=True):
    """What taking a workspace snapshot gave: its compressed size, or why it was skipped."""

    size: int | None = None  # bytes of the .tar.gz written
    path: str = ""  # where it is, on the daemon's disk
    skipped: str = ""  # why no snapshot was written ("" when one was)


class Sandbox(Protocol):
    paths: SandboxPaths
    llm_host: str  # the address at which processes inside reach the host's LLM gateway

    @property
    def host_files(self) -> HostView | None: ...  # None when the files are not on the daemon's disk

    @property
    def restored(self) -> bool: ...  # the last `prepare` found the workspace gone and put its last snapshot back

    async def prepare(self) -> None: ...
    async def seed(self, files: dict[str, str]) -> None: ...  # write each workspace file that is absent
    async def put_prompt(self, job_id: str, text: str) -> str: ...  # the prompt's sandbox-side path
    async def job_state(self, job_id: str) -> JobState: ...
    async def wait_marker(self, job_id: str, timeout: float, watcher: MarkerWatcher) -> Marker | None: ...
    async def count_loc(self) -> int: ...  # lines of code in the workspace (see `loc`)
    async def server_log(self, limit: int) -> str: ...  # the tail of the last server start's output
    async def snapshot(self, limit: int = SNAPSHOT_LIMIT) -> Snapshot | None: ...  # None: not needed
    async def restore(self, src: Path) -> None: ...  # a snapshot's workspace into this sandbox
    async def keep_code(self, job_id: str) -> None: ...  # the workspace's code as the job's (see `codekeep`)
    async def launch(self, job_id: str, argv: list[str], env: dict[str, str]) -> None: ...
    async def kill_job(self, job_id: str) -> None: ...
    async def job_alive(self, job_id: str) -> bool: ...
    async def health(self, since: float) -> Loss | None: ...  # None while up; `since`: the attempt's start
    async def frozen(self, since: float) -> str: ...  # why it was paused from outside since then ("" if it was not)
    async def start_server(self, timeout: float, request_timeout: float = 5.0) -> ServerHandle: ...
    async def stop_server(self, handle: ServerHandle) -> None: ...
    async def close(self) -> None: ...
    def describe(self) -> dict[str, Any]: ...  # where it is (runtime, root, container), stored with the scenario
    # The outage watch of the engine it runs on, when an attempt that met a platform fault should wait for that
    # engine to answer again rather than spend an infra retry (`outage`); None: nothing to wait for.
    def watch(self) -> EngineWatch | None: ...


class SandboxFactory(Protocol):
    """A runtime: makes a scenario's sandbox, and tells the LLM gateway how its sandboxes reach it."""

    def __call__(self, root: Path, label: str, grant: Grant = ...) -> Sandbox: ...
    async def llm_hosts(self) -> list[str]: ...  # addresses besides 127.0.0.1 the gateway must listen on
    def llm_serving(self, port: int) -> None: ...  # the gateway now serves on `port`
    async def aclose(self, sandboxes: Path) -> None: ...  # a sweep ended: remove what is left under `sandboxes`


def marker_path(host_control: Path, job_id: str) -> Path:
    return host_control / "markers" / f"{job_id}.json"


def job_script(paths: SandboxPaths, argv: list[str], env: dict[str, str]) -> str:
    """A job's cmd file: its environment, the workspace as its directory, then the harness command."""
    home = f"{paths.workspace}/.home"
    lines = [
        "#!/bin/sh",
        f"mkdir -p {shlex.quote(home)}",
        f"export HOME={shlex.quote(home)}",
        *(f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())),
        f"cd {shlex.quote(paths.workspace)}",
        f"exec {shlex.join(argv)}",
        "",
    ]
    return "\n".join(lines)


def write_job(host_control: Path, paths: SandboxPaths, job_id: str, argv: list[str], env: dict[str, str]) -> Path:
    """Write the job's cmd file on the host; returns the host job directory."""
    job = host_control / "jobs" / job_id
    job.mkdir(parents=True, exist_ok=True)
    (host_control / "markers").mkdir(parents=True, exist_ok=True)
    (job / "cmd").write_text(job_script(paths, argv, env))
    return job


class NotReady(Exception):
    """The agent's server did not start or answer within the bounds: the agent's failure (scored, consumes R).

    `kind` is how it failed (`protocol.kinds.ServerKind`); the message says what the probe saw, for feedback.
    `connected`: whether any probe reached a listener on the port (False: every connection was refused).
    """

    def __init__(self, kind: ServerKind, message: str, connected: bool = True) -> None:
        super().__init__(message)
        self.kind = kind
        self.connected = connected
