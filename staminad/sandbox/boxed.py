"""The engine's `Sandbox` composed over a runtime's narrow seam (`seam.Box`): what a new runtime gets for free.

`BoxedSandbox` holds a box and provides every operation of `base.Sandbox` on top of it, by composition, not
inheritance: the files on the daemon's disk (`hostfiles.HostFiles`, held as `files`): seed, put_prompt, job_state,
wait_marker, count_loc, server_log, snapshot, restore, keep_code; the jobs through the existing wrapper.sh and its
markers: launch, job_alive, kill_job, close (the wrapper runs on the host, out of the agent's reach, and the
harness in an enclosure of its own); the server (`boxserver.BoxServer`): start_server with the readiness probe and
the blame rules, stop_server; and prepare, health, describe, watch, frozen. The `bwrap` runtime is built this way.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import anyio

from staminad.sandbox.base import (
    WRAPPER,
    HostView,
    JobState,
    Loss,
    SandboxPaths,
    ServerHandle,
    Snapshot,
    job_script,
    marker_path,
)
from staminad.sandbox.bounded import read_int
from staminad.sandbox.boxserver import BoxServer
from staminad.sandbox.hostfiles import HostFiles
from staminad.sandbox.hostprocs import group_alive, kill_group
from staminad.sandbox.hostspawn import LIMITS, base_env, run_briefly
from staminad.sandbox.markers import Marker, MarkerWatcher
from staminad.sandbox.offloop import quick
from staminad.sandbox.ports import PortAllocator
from staminad.sandbox.seam import Box
from staminad.suite.niceness import NICE_ENV, RAISED_ENV, child_nice, raised

JOB_RECORD = "box.json"  # in a job's directory: the enclosure its harness runs in (`Box.enclose`)


class HostDirs(HostFiles):
    """The file operations over a sandbox's workspace and control directory on the daemon's disk."""

    def __init__(self, view: HostView, paths: SandboxPaths) -> None:
        self.host_workspace = view.workspace
        self.host_control = view.control
        self.paths = paths


class BoxedSandbox:
    """The engine's `Sandbox`, composed of a runtime's `Box`, its files (`HostDirs`) and its server (`BoxServer`)."""

    restored = False  # the workspace lives on the daemon's disk: never lost with the sandbox

    def __init__(self, view: HostView, box: Box, ports: PortAllocator, llm_host: str = "127.0.0.1") -> None:
        self.view = view
        self.box = box
        self.paths = box.paths
        self.llm_host = llm_host  # the enclosure shares the host's network: the gateway is on loopback
        self.files = HostDirs(view, box.paths)
        self.server = BoxServer(box, view, ports)

    # --- files: the daemon's disk -------------------------------------------------------------------

    @property
    def host_files(self) -> HostView | None:
        return self.view

    async def seed(self, files: dict[str, str]) -> None:
        await self.files.seed(files)

    async def put_prompt(self, job_id: str, text: str) -> str:
        return await self.files.put_prompt(job_id, text)

    async def job_state(self, job_id: str) -> JobState:
        return await self.files.job_state(job_id)

    async def wait_marker(self, job_id: str, timeout: float, watcher: MarkerWatcher) -> Marker | None:
        return await self.files.wait_marker(job_id, timeout, watcher)

    async def count_loc(self) -> int:
        return await self.files.count_loc()

    async def server_log(self, limit: int) -> str:
        return await self.files.server_log(limit)

    async def snapshot(self, limit: int = 0) -> Snapshot | None:
        return await self.files.snapshot(limit)

    async def restore(self, src: Path) -> None:
        await self.files.restore(src)

    async def keep_code(self, job_id: str) -> None:
        await self.files.keep_code(job_id)

    # --- the sandbox as a whole -----------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return self.box.describe()

    def watch(self) -> None:
        """Processes on this machine: no engine to wait for."""
        return

    async def frozen(self, since: float) -> str:
        """No engine pauses an enclosure from outside."""
        return ""

    async def prepare(self) -> None:
        await quick(self._make_dirs)
        await self.box.open()
        await self.server.end_left()  # a server a daemon killed mid-suite left running

    def _make_dirs(self) -> None:
        self.view.workspace.mkdir(parents=True, exist_ok=True)
        for sub in ("markers", "prompts", "jobs"):
            (self.view.control / sub).mkdir(parents=True, exist_ok=True)

    async def health(self, since: float) -> Loss | None:
        if not self.view.workspace.is_dir():  # polled: one stat costs less than a hop
            return Loss(kind="sandbox_lost", detail=f"the workspace {self.view.workspace} is gone")
        return await self.box.health()

    # --- jobs: wrapper.sh on the host, the harness in an enclosure --------------------------------------

    async def launch(self, job_id: str, argv: list[str], env: dict[str, str]) -> None:
        await anyio.to_thread.run_sync(self._launch, job_id, argv, env)

    def _launch(self, job_id: str, argv: list[str], env: dict[str, str]) -> None:
        """The wrapper (on the host, out of the agent's reach) runs the job's `cmd`, which runs the harness in an
        enclosure of its own; the wrapper writes the marker when it ends."""
        job = self.view.control / "jobs" / job_id
        job.mkdir(parents=True, exist_ok=True)
        (self.view.control / "markers").mkdir(parents=True, exist_ok=True)
        inner = ["sh", "-c", job_script(self.paths, argv, env)]
        (job / "cmd").write_text(f"#!/bin/sh\n{shlex.join(self.box.enclose(inner, {}, job / JOB_RECORD))}\n")
        marker = marker_path(self.view.control, job_id)
        argv_ = [*LIMITS, "setsid", "-f", "sh", str(WRAPPER), str(job), str(marker)]
        run_briefly(argv_, {**base_env(), NICE_ENV: str(child_nice()), RAISED_ENV: str(raised())})

    def _pid(self, job_id: str) -> int | None:
        return read_int(self.view.control / "jobs" / job_id / "pid")

    async def job_alive(self, job_id: str) -> bool:
        return group_alive(self._pid(job_id))

    async def kill_job(self, job_id: str) -> None:
        await quick(self._kill_job, job_id)

    def _kill_job(self, job_id: str) -> None:
        """The wrapper's group, then the harness's enclosure with everything the harness left in it."""
        pid = self._pid(job_id)
        if pid is not None and not marker_path(self.view.control, job_id).exists():
            kill_group(pid)  # a wrapper that wrote its marker is gone, and its pid may be another's by now
        self.box.end(self.view.control / "jobs" / job_id / JOB_RECORD)

    # --- the server -----------------------------------------------------------------------------------

    async def start_server(self, timeout: float, request_timeout: float = 5.0) -> ServerHandle:
        """Nothing the harness left running outlives its phase: every job's enclosure ends first."""
        await quick(self._end_jobs)
        return await self.server.start(timeout, request_timeout)

    async def stop_server(self, handle: ServerHandle) -> None:
        await self.server.stop(handle)

    def _end_jobs(self) -> None:
        jobs = self.view.control / "jobs"
        for job in jobs.iterdir() if jobs.is_dir() else ():
            self.box.end(job / JOB_RECORD)

    async def close(self) -> None:
        """Kill every harness job still running and its enclosure; the workspace stays for inspection and resume."""
        jobs = self.view.control / "jobs"
        for job in jobs.iterdir() if jobs.is_dir() else ():
            await self.kill_job(job.name)
        await self.server.end_left()
