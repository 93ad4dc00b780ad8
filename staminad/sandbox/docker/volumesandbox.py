"""The `docker` runtime with `[run] workspace = "volume"`: a sandbox that shares no file system with the daemon.

The container is the one every Docker sandbox is (`sealed.SealedContainer`: the same image, limits,
seal, health judgement and server checks), but its files live in four labelled named volumes on the
engine, so it may run on any engine the daemon reaches by its API:

- `<container>-workspace` at /workspace, the agent's (its root is handed to the agent once, by a
  short-lived helper holding CAP_CHOWN alone);
- `<container>-control` at /opt/stamina/control (root, below the 0700 /opt/stamina): job commands,
  pids, logs, markers, the server's pid and log;
- `<container>-layer` and `<container>-prompts`, each mounted twice: writable below /opt/stamina,
  where their files are put, and read-only at /harness and /stamina/prompts for the agent.

Docker 20.10 (API 1.41) has no volume subpaths, hence one volume per part (`volumeset`: the volumes,
and the stamp by which a prepare cut off anywhere, say by a daemon killed -9, is known and done
again; the layer, which holds the launcher, goes in on every prepare). Files go in by
`put_archive` (the layer, root's; README and specification, the agent's; a restored snapshot) or,
for the root-owned prompt and job command of every turn, by the container's launcher, reached over
one attached `docker exec` (`streamlauncher`; a `put_archive` costs 65-135 ms on this engine, a launcher
write about 1 ms); the agent can neither change them nor read a job's command. Nothing comes out but
through `get_archive` or that launcher. A marker is awaited by the launcher and read back through it,
so completion is seen with no inotify, and after a daemon restart a new launcher finds a finished
job's marker in the control volume; a lost container is recreated on the same volumes. After each
tested attempt the workspace comes back as a bounded .tar.gz under the sandbox directory
(`snapshot`), which `restore` puts into fresh volumes; the harness and server logs are mirrored
(bounded) into the sandbox directory for the daemon's views and the viewer. The server is published
on an engine port Docker picks, reached at `server_host`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiodocker
import aiohttp
import anyio

from protocol.kinds import InfraKind
from staminad.sandbox.base import (
    HARNESS_DIR,
    SERVER_PORT_IN_CONTAINER,
    SNAPSHOT_LIMIT,
    Grant,
    HostView,
    JobState,
    SandboxError,
    Snapshot,
    job_script,
)
from staminad.sandbox.codekeep import keep_from_archive, keep_nothing
from staminad.sandbox.docker.container import (
    CONTROL,
    OP_TIMEOUT,
    ROOT,
    _agent,
    agent_ids,
    ensure_network,
    forget_network,
    network_gone,
)
from staminad.sandbox.docker.placementfiles import SNAPSHOT
from staminad.sandbox.docker.replies import A
from staminad.sandbox.docker.requests import (
    CountLoc,
    FindAbsent,
    ReadFile,
    ReadJob,
    ReadOwner,
    RemoveFile,
    Request,
    Spawn,
    WaitMarker,
    WriteFile,
)
from staminad.sandbox.docker.sealed import HARNESS_LOG_LIMIT, SealedContainer
from staminad.sandbox.docker.snapshot import take_snapshot, tar_bytes
from staminad.sandbox.docker.streamclient import LauncherStream
from staminad.sandbox.docker.volumeset import PARTS, STAMP, UNTOKENED, VolumeSet, stamp, stamped
from staminad.sandbox.markers import Marker, MarkerWatcher, check_marker
from staminad.sandbox.settings import ContainerSettings

# Besides the agent's layer: the streaming launcher and the line counter it runs as the agent.
STREAM_FILES = (
    "sandbox/inside/launcher.py",
    "sandbox/inside/pgroups.py",
    "sandbox/inside/listening.py",
    "sandbox/inside/streamlauncher.py",
    "sandbox/inside/loc.py",
    "sandbox/inside/beneath.py",
)
STREAMER = "/harness/sandbox/inside/streamlauncher.py"
MIRROR_LIMIT = 256 << 10  # bytes of a harness or server log mirrored into the sandbox directory


class VolumeSandbox(SealedContainer):
    """A scenario's container on its own named volumes (see the module docstring)."""

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
        server_host: str = "127.0.0.1",
    ) -> None:
        super().__init__(docker, root, sweep, label, run, creations, grant, llm, publish_ip)
        self.server_host = server_host  # where the daemon reaches the engine host's published ports
        self.host_control = self.root / "control"  # only mirrors of logs, for the daemon's views
        self.layer = tuple(dict.fromkeys((*grant.layer, *STREAM_FILES)))
        self.stream = LauncherStream(self.name, self._open_launcher)
        self.volumes = VolumeSet(docker, self.name, self._labels(), self._engine)
        self.restored = False  # see `prepare`
        self._tokens: dict[str, str] = {}  # the volumes' tokens as the last `prepare` found them
        self._snapped: Snapshot | None = None  # the last snapshot, until `keep_code` reads its code

    @property
    def host_files(self) -> HostView | None:
        return None

    def volume(self, part: str) -> str:
        return self.volumes.name(part)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "workspace": "volume", "volumes": [self.volume(p) for p in PARTS]}

    def _mounts(self) -> dict[str, Any]:
        # The port stays unset: the engine picks the published one (a remote engine's ports are not ours to probe).
        return {"Mounts": self.volumes.mounts()}

    async def _engine(self, what: str, op: Callable[[], Any]) -> Any:
        """One engine API call under OP_TIMEOUT, its failures as SandboxError (`sandbox_lost` for 404/409)."""
        try:
            with anyio.fail_after(OP_TIMEOUT):
                return await op()
        except aiodocker.exceptions.DockerError as exc:
            if network_gone(exc):
                forget_network(self.docker)  # the next create makes it again (the retry below, or the next prepare)
            kind: InfraKind = "sandbox_lost" if exc.status in (404, 409) else "engine_error"
            raise SandboxError(f"{what} ({self.name}): {exc.message}", kind) from None
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise SandboxError(f"{what} ({self.name}): {type(exc).__name__}: {exc}", "engine_error") from None

    async def _put(self, path: str, data: bytes) -> None:
        container = await self._container()
        if container is None:
            raise SandboxError(f"container {self.name} is gone")
        await self._engine(f"put files into {path}", lambda: container.put_archive(path, data))

    async def prepare(self) -> None:
        """Create (or recreate on the same volumes) and start the container, sealed, its layer in place.

        Safe to cut off anywhere (a daemon killed -9) and run again: the layer goes in before the launcher
        (part of it) is asked anything, every prepare; the rest of a volume set's population (the workspace
        handed to the agent, the control directories, a snapshot put back) is done until the stamp written
        last in the control volume names these very volumes (`_populate`). A launcher that does not come up
        gets the container made anew, once, before the failure is the attempt's. New volumes of a scenario
        that has a snapshot (its volumes were reaped, say by a cancel before a resume, or lost with an
        engine) get that snapshot back, and `restored` says so until a harness is launched on them (the stamp
        keeps it, so a daemon killed before the engine acted on it does not lose it)."""
        self.restored = False
        if self.grant.llm and self.llm is None:
            # Its engine gave the gateway no address (it did not answer when the sweep began): sealed with no way
            # to the model, the harness would fail for the platform's reason and be scored for it.
            raise SandboxError(f"no LLM gateway address for {self.name}'s engine", "engine_error")
        tokens = await self.volumes.ensure()
        try:
            booted, text = await self._boot()
        except SandboxError as exc:
            # What the daemon puts in went in, or failed to, on a container found there, so the container is what
            # fails (made by an older daemon with other mounts, its pids used up by leftovers): the same on every
            # retry until it is made anew, so it is made anew here, once.
            try:
                await self.close()
            except SandboxError:
                raise exc from None  # the engine does not answer: nothing here to make anew
            try:
                booted, text = await self._boot()
            except SandboxError as again:
                why = f"{again} (also after its container was made anew; before: {exc})"
                raise SandboxError(why, again.kind) from None
        self._tokens = tokens
        found = stamped(text)
        if found.get("volumes") != tokens:
            await self._populate(tokens)
        else:
            self.restored = found.get("restored") is True
        # The agent may have removed its HOME; ours again every time (the harness's session lives there).
        await self._put("/workspace", tar_bytes([(".home", None, agent_ids()[0], 0o755)]))
        if booted:
            await self._clear_server_files()

    async def _boot(self) -> tuple[bool, str | None]:
        """The container made if missing, started if stopped, sealed, its layer put in and its launcher asked for
        the stamp: whether it was (re)started (a new pid namespace: pids recorded in the control volume mean
        nothing now), and the stamp."""
        container = await self._container()
        booted = container is None
        if container is None:
            await ensure_network(self.docker)  # looked up once per client (see `ensure_network`)
            async with self.creations:
                container = await self._engine(
                    "create container", lambda: self.docker.containers.create(config=self._config(), name=self.name)
                )
        info = await self._engine("inspect container", container.show)
        if not info["State"]["Running"]:
            booted = True
            await self.stream.close()
            await self._engine("start container", container.start)
            info = await self._engine("inspect container", container.show)
        self.own(info)  # started now, or adopted running: this is the container made ready (see `health`)
        ports = (info.get("NetworkSettings") or {}).get("Ports") or {}
        binding = ports.get(f"{SERVER_PORT_IN_CONTAINER}/tcp") or []
        self.port = int(binding[0]["HostPort"]) if binding else None
        await self._seal(container)
        # Put in whole every time, before the launcher (one of its files) is asked anything: a daemon killed
        # between making the volumes and filling them left it empty, and only what is put in is known to be there.
        layer = [(rel, (HARNESS_DIR / rel).read_bytes(), 0, 0o644) for rel in self.layer]
        dirs = sorted({str(Path(rel).parents[i]) for rel in self.layer for i in range(len(Path(rel).parts) - 1)})
        await self._put(PARTS["layer"][0], tar_bytes([*((d, None, 0, 0o755) for d in dirs), *layer]))
        return booted, await self._read(STAMP, 4096)  # the first request: the launcher comes up, or this fails

    async def _populate(self, tokens: dict[str, str]) -> None:
        """What a volume set gets once, each step safe to repeat, then the stamp naming these volumes: written
        last, so a prepare cut off before it finds no stamp (or another set's) and does it all again."""
        if (await self._op(ReadOwner())).uid != agent_ids()[0]:
            await self.volumes.hand_workspace(self.image)
        await self._put(CONTROL, tar_bytes([("jobs", None, 0, 0o755), ("markers", None, 0, 0o755)]))
        snapshot = self.root / SNAPSHOT
        # No harness ran on a workspace never stamped: the snapshot (or a part of it put in by a prepare cut off)
        # is all it holds, so putting it in whole again loses nothing. One an older daemon made (no token, never
        # stamped) was given the snapshot, if at all, when made: the work in it may be newer.
        if snapshot.exists() and not tokens["workspace"].startswith(UNTOKENED):
            await self.restore(snapshot)
            self.restored = True
        await self._write_stamp()

    async def _write_stamp(self) -> None:
        text = stamp(self._tokens, self.restored)
        await self._op(WriteFile(under="control", path=STAMP, text=text, mode=0o600))

    async def _open_launcher(self) -> Any:
        container = await self._container()
        if container is None:
            raise SandboxError(f"container {self.name} is gone")
        cmd = ["python3", "-I", "-S", STREAMER, CONTROL, "/workspace"]
        return await container.exec(cmd=cmd, user=ROOT, stdin=True, stdout=True, stderr=True, workdir="/workspace")

    async def _op(self, request: Request[A], timeout: float = OP_TIMEOUT) -> A:
        return await self.stream.call(request, timeout, self._usable)

    async def _read(self, rel: str, limit: int, tail: bool = False) -> str | None:
        return (await self._op(ReadFile(path=rel, limit=limit, tail=tail))).text

    async def _mirror(self, rel: str) -> None:
        """The tail of a control file, copied into the sandbox directory (the daemon's views read it there)."""
        text = await self._read(rel, MIRROR_LIMIT, tail=True)
        if text is not None:
            dest = self.host_control / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)

    async def launch(self, job_id: str, argv: list[str], env: dict[str, str]) -> None:
        if self.restored:  # a harness works on the restored files from now: a later loss is a loss of its work
            self.restored = False
            await self._write_stamp()
        cmd = job_script(self.paths, argv, env)
        await self._op(WriteFile(under="control", path=f"jobs/{job_id}/cmd", text=cmd, mode=0o600))
        wrapper = [
            "sh",
            "/harness/sandbox/inside/wrapper.sh",
            f"{CONTROL}/jobs/{job_id}",
            f"{CONTROL}/markers/{job_id}.json",
        ]
        limits = [str(self.quota_kb), "/workspace", str(HARNESS_LOG_LIMIT)]
        await self._op(Spawn(argv=(*wrapper, _agent(), *limits)))

    async def job_state(self, job_id: str) -> JobState:
        found = await self._op(ReadJob(job=job_id))
        return JobState(
            written=found.written,
            started=found.pid is not None,
            marker=check_marker(found.marker, time.time()) if found.marker is not None else None,
        )

    async def _pid(self, job_id: str) -> int | None:
        pid = (await self._op(ReadJob(job=job_id))).pid
        return int(pid) if pid is not None and pid.isdigit() else None

    async def wait_marker(self, job_id: str, timeout: float, watcher: MarkerWatcher) -> Marker | None:
        """The marker once the launcher sees it (it looks every few ms), or None after `timeout`."""
        try:
            found = (await self._op(WaitMarker(job=job_id, timeout=timeout), timeout + OP_TIMEOUT)).marker
        except SandboxError:
            loss = await self.health(0.0)
            if loss is not None and loss.paused:
                return None  # frozen: the engine waits for it as with a bind mount (see ScenarioRunner._wait_marker)
            raise
        if found is None or "exit" not in found:
            return None
        with contextlib.suppress(SandboxError, OSError):
            await self._mirror(f"jobs/{job_id}/log")
        return check_marker(found, time.time())

    async def kill_job(self, job_id: str) -> None:
        """Kill a stuck job's process group, then mirror what it logged (no marker will)."""
        await super().kill_job(job_id)
        with contextlib.suppress(SandboxError, OSError):
            await self._mirror(f"jobs/{job_id}/log")

    async def seed(self, files: dict[str, str]) -> None:
        # Interfered with by the agent's processes: every file is written again (they are ours, the same texts).
        found = await self._op(FindAbsent(names=tuple(files), as_=_agent()))
        absent = list(files) if found.absent is None else found.absent
        if absent:
            uid = agent_ids()[0]
            await self._put("/workspace", tar_bytes([(n, files[n].encode(), uid, 0o644) for n in absent if n in files]))

    async def put_prompt(self, job_id: str, text: str) -> str:
        await self._op(WriteFile(under="prompts", path=f"{job_id}.md", text=text, mode=0o644))
        return f"{self.paths.control}/prompts/{job_id}.md"

    async def count_loc(self) -> int:
        found = await self._op(CountLoc(as_=_agent()), timeout=120)
        if found.loc is None:
            raise SandboxError(f"no line count: {found.interfered}", "engine_error")  # judged as no count
        return found.loc

    async def server_log(self, limit: int) -> str:
        return await self._read("server.log", limit, tail=True) or ""

    async def _server_pgid(self) -> int | None:
        text = await self._read("server.pid", 64)
        return int(text.strip()) if text and text.strip().isdigit() else None

    async def _server_exited(self) -> bool:
        return await self._read("server.exit", 64) is not None

    async def _clear_server_files(self) -> None:
        for name in ("server.pid", "server.exit"):
            await self._op(RemoveFile(path=name))

    def _server_url(self, port: int) -> str:
        return f"http://{self.server_host}:{port}"

    async def stop_server(self, handle: Any) -> None:
        await super().stop_server(handle)
        with contextlib.suppress(SandboxError, OSError):
            await self._mirror("server.log")

    async def snapshot(self, limit: int = 0) -> Snapshot | None:
        """The workspace as .tar.gz in `<sandbox>/snapshots/workspace.tar.gz` (the last one taken), or why not."""
        self._snapped = await take_snapshot(self.docker, self.name, self.root / "snapshots", limit or SNAPSHOT_LIMIT)
        return self._snapped

    async def keep_code(self, job_id: str) -> None:
        """The code of the snapshot taken just before (see `codekeep`), or why there is none."""
        snap, self._snapped = self._snapped, None
        if snap is None or snap.skipped or not snap.path:
            why = snap.skipped if snap is not None and snap.skipped else "no snapshot of this workspace was taken"
            await anyio.to_thread.run_sync(keep_nothing, self.root, job_id, why)
        else:
            await anyio.to_thread.run_sync(keep_from_archive, Path(snap.path), self.root, job_id)

    async def restore(self, src: Path) -> None:
        """A snapshot's files into this sandbox's workspace (say, fresh volumes on another engine)."""
        data = await anyio.to_thread.run_sync(src.read_bytes)
        await self._put("/workspace", data)

    async def close(self) -> None:
        """Hang up on the launcher and remove the container; the volumes stay (`prepare` reuses them)."""
        await self.stream.close()
        container = await self._container()
        if container is not None:
            with contextlib.suppress(SandboxError):
                await self._engine("remove container", lambda: container.delete(force=True))
