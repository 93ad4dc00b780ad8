"""The sandbox file operations over a workspace and control directory on the daemon's own disk.

`local` and the bind-mounted `docker` runtime keep their files here and share these operations
(`HostFiles`, a mixin over `host_workspace`, `host_control` and `paths`), so the engine never
touches a host path itself: the same calls reach a sandbox whose files live only in an engine's
volumes (`docker.volumesandbox`). Markers are watched with the daemon's one inotify watcher. `stage_layer` puts
a bind-mounted sandbox's agent layer on that disk.
"""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import anyio

from staminad.sandbox.base import HARNESS_DIR, HostView, JobState, SandboxPaths, Snapshot
from staminad.sandbox.codekeep import keep_from_dir
from staminad.sandbox.inside.beneath import create_file
from staminad.sandbox.inside.loc import count_loc
from staminad.sandbox.markers import Marker, MarkerWatcher, read_marker
from staminad.sandbox.offloop import quick
from staminad.sandbox.readiness import log_tail
from staminad.suite.pool import run_sync as offload


def _seed(workspace: Path, files: dict[str, str], owner: tuple[int, int] | None) -> None:
    """Create each file that is absent, owned by `owner` (an agent's edits to one it was given are kept on resume).

    Anything already at a name (the agent's file, or a link it left there, dangling or not) counts as present and is
    never written through (see `beneath`).
    """
    workspace.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        create_file(workspace, name, text.encode(), owner=owner)


def _extract(src: Path, workspace: Path) -> None:
    """A workspace snapshot (.tar.gz of its contents) into `workspace`; the `data` filter refuses links out,
    absolute paths and device files."""
    workspace.mkdir(parents=True, exist_ok=True)
    with tarfile.open(src, "r:gz") as tar:
        tar.extractall(workspace, filter="data")


class HostFiles:
    restored = False  # the workspace lives on the daemon's disk: never lost with the sandbox
    """Sandbox operations on files under `host_workspace` and `host_control` (see the module docstring)."""

    host_workspace: Path
    host_control: Path
    paths: SandboxPaths

    @property
    def host_files(self) -> HostView | None:
        return HostView(workspace=self.host_workspace, control=self.host_control)

    seed_owner: tuple[int, int] | None = None  # who the seeded files belong to (the agent's ids in a container)

    async def seed(self, files: dict[str, str]) -> None:
        await anyio.to_thread.run_sync(_seed, self.host_workspace, files, self.seed_owner)

    async def put_prompt(self, job_id: str, text: str) -> str:
        await quick(_put_prompt, self.host_control / "prompts" / f"{job_id}.md", text)
        return f"{self.paths.control}/prompts/{job_id}.md"

    def _marker_file(self, job_id: str) -> Path:
        return self.host_control / "markers" / f"{job_id}.json"

    async def job_state(self, job_id: str) -> JobState:
        job = self.host_control / "jobs" / job_id
        return await quick(_job_state, job, self._marker_file(job_id))

    async def wait_marker(self, job_id: str, timeout: float, watcher: MarkerWatcher) -> Marker | None:
        return await watcher.wait(self._marker_file(job_id), timeout)

    async def count_loc(self) -> int:
        return await offload(count_loc, self.host_workspace)

    async def server_log(self, limit: int) -> str:
        return await offload(log_tail, self.host_control / "server.log", limit)

    async def snapshot(self, limit: int = 0) -> Snapshot | None:
        """None: the workspace already lives on the daemon's disk, where resume finds it."""
        return None

    async def restore(self, src: Path) -> None:
        await anyio.to_thread.run_sync(_extract, src, self.host_workspace)

    async def keep_code(self, job_id: str) -> None:
        """The workspace's code as the job's, in `code/` beside the workspace (see `codekeep`)."""
        await anyio.to_thread.run_sync(keep_from_dir, self.host_workspace, self.host_workspace.parent, job_id)


def _put_prompt(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _job_state(job: Path, marker: Path) -> JobState:
    """What the job's files say (three file operations: one hop off the event loop)."""
    return JobState(written=job.exists(), started=(job / "pid").exists(), marker=read_marker(marker))


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
