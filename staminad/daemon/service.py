"""staminad as a service: one instance per state directory, a control socket, sweeps run on request.

Start-up takes an exclusive lock on `staminad.lock` (so replacing a stale socket file is safe),
opens the store, resumes every sweep recorded as running or paused, binds the Unix socket (mode
0600 unless configured; with a socket group the state directory is shared with it, see `access.py`)
and only then reports ready. A graceful stop lets detached harnesses run
on, so a restart picks them up from their markers; `drain` first lets running attempts finish.
The operator's actions on sweeps, and each sweep's run, are `staminad.daemon.control`'s.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
from anyio.abc import ByteStream, TaskStatus

from protocol import EngineInfo, ErrorReply, OpsReport, SweepInfo, encoder
from protocol.framing import frame
from protocol.paths import clear_stale_socket, socket_path
from protocol.stream import connection_cap, serve_unix
from staminad.daemon.access import share_socket, share_state_dir, share_store
from staminad.daemon.bus import EventBus
from staminad.daemon.connection import IDLE_TIMEOUT, VERSION, serve_client
from staminad.daemon.control import SweepControl
from staminad.daemon.enginestate import engines_of, outage_line
from staminad.daemon.logs import EngineHealth, daemon_logging, log
from staminad.daemon.loopprobe import probe_from_env
from staminad.daemon.notify import notify, watchdog
from staminad.daemon.ops import OpsRing, report, sweep_infos
from staminad.daemon.orphanwatch import OrphanWatch
from staminad.daemon.running import Running
from staminad.daemon.stopbound import EXIT_GRACE, STOP_TIMEOUT, ExitTimer, wait_for_sweeps
from staminad.engine.fair import FairLimiter
from staminad.engine.markers import MarkerWatcher
from staminad.sandbox.docker.enginespec import EngineSpec
from staminad.sandbox.ports import PortAllocator
from staminad.suite.pool import WorkerPool
from state import sweeps
from state.lock import StateDirError, lock_state_dir
from state.store import Store

if TYPE_CHECKING:
    from staminad.sandbox.docker.enginepool import Slots


class DaemonError(RuntimeError):
    """The daemon cannot start (already running, unusable state directory)."""


class Daemon(SweepControl):
    """One staminad serving a state directory: its life cycle here, its sweeps' steering in `SweepControl`."""

    def __init__(
        self,
        state_dir: Path,
        socket_mode: int = 0o600,
        socket_group: str | None = None,
        runtime: str | None = None,
        max_parallel: int = 64,
        metrics_port: int | None = None,
        suite_parallel: int | None = None,
        max_connections: int | None = None,
        idle_timeout: float = IDLE_TIMEOUT,
        log_to_stderr: bool = True,
        engines: list[EngineSpec] | None = None,
        workers: int | None = None,
        metrics_host: str = "127.0.0.1",
        stop_timeout: float = STOP_TIMEOUT,
    ) -> None:
        self.state_dir = state_dir
        self.stop_timeout = stop_timeout  # the sweeps' clean-up on a stop, then EXIT_GRACE more at most (`stopbound`)
        self.exit_timer: ExitTimer | None = None
        self.log_to_stderr = log_to_stderr
        self.socket_path = socket_path(state_dir)  # refused in one line if the path is too long for a socket
        self.socket_mode, self.socket_group, self.runtime = socket_mode, socket_group, runtime
        self.bus = EventBus()
        self.metrics_port, self.metrics_host = metrics_port, metrics_host
        self.max_connections = max_connections or connection_cap()  # fits the fd limit: accept() never fails
        self.idle_timeout = idle_timeout
        self.metrics: Any = None
        self.ports = PortAllocator()
        self.engines = list(engines or [])  # `--engine`s: every sweep naming none of its own is spread over them
        self.engine_slots: dict[str, Slots] = {}  # slots in use per engine URL, across the daemon's sweeps
        self.limiter = FairLimiter(max_parallel)
        self.suites = anyio.CapacityLimiter(suite_parallel or 4 * (os.cpu_count() or 1))
        # Suites and their generation run in worker processes (`suite.pool`); 0: in threads of this one.
        self.workers = WorkerPool(workers) if workers != 0 else None
        self.running: dict[str, Running] = {}
        self.detach = anyio.Event()  # set on a graceful stop: harnesses keep running for the restart
        self._stop = anyio.Event()
        self._drain = False
        self._tg: anyio.abc.TaskGroup | None = None
        self.store: Store | None = None
        self._lock_fd: int | None = None
        self.watcher: MarkerWatcher | None = None
        docker = Path("/var/lib/docker")  # Docker's usual data root: where sandbox images and layers fill up
        self.ops = OpsRing({"state": state_dir, **({"docker": docker} if docker.is_dir() else {})})
        self.expanding: dict[str, tuple[int, int]] = {}  # sweeps still being laid out: (recorded, total)
        self.orphan_watch = OrphanWatch(state_dir)  # sandboxes no state directory owns any more (issue 42)

    # --- life cycle ---------------------------------------------------------------------------

    def acquire(self) -> None:
        """Take the state directory's lock (raises DaemonError if another instance holds it)."""
        if self._lock_fd is None:
            self._lock_fd = self._lock()

    def _lock(self) -> int:
        try:
            return lock_state_dir(self.state_dir, f"another staminad already runs on {self.state_dir}", "daemon")
        except StateDirError as exc:
            raise DaemonError(str(exc)) from None

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        self.acquire()
        assert self._lock_fd is not None
        lock_fd, self._lock_fd = self._lock_fd, None
        logs = contextlib.ExitStack()
        socket_ours = False
        try:
            if self.metrics_port:  # first: a port taken refuses the start, in one line, before anything is served
                from staminad.daemon.metrics import Metrics

                self.metrics = Metrics(self)
                self.metrics.serve(self.metrics_port, self.metrics_host)
            if self.socket_group:  # before the log and the store are made in it: they take its group
                share_state_dir(self.state_dir, self.socket_group)
            logs.enter_context(daemon_logging(self.state_dir, stderr=self.log_to_stderr))
            log.info("starting on %s (pid %d)", self.state_dir, os.getpid())
            self.store = await Store.open(self.state_dir / "staminad.db")
            if self.socket_group:  # its -wal and -shm exist now, and stay while the store is open
                share_store(self.state_dir / "staminad.db", self.socket_group)
            self.watcher = MarkerWatcher()
            # We hold the lock, so no daemon serves it: a socket left by one that died goes, anything else stays.
            clear_stale_socket(self.socket_path, f"move it out of {self.state_dir}")
            socket_ours = True  # from here the path is free or our socket: removed on the way out
            async with anyio.create_task_group() as tg:
                self._tg = tg
                umask = os.umask(0o177)  # the socket is born 0600, then opened up as configured
                try:
                    refusal = frame(
                        encoder().encode(
                            ErrorReply(
                                message=f"staminad is serving its limit of {self.max_connections} connections; "
                                "close idle clients or try again shortly"
                            )
                        )
                    )
                    await tg.start(
                        functools.partial(serve_unix, max_connections=self.max_connections, refusal=refusal),
                        self.socket_path,
                        self._client,
                        tg,
                    )
                finally:
                    os.umask(umask)
                share_socket(self.socket_path, self.socket_mode, self.socket_group)
                if self.workers is not None:
                    await tg.start(self.workers.serve)
                tg.start_soon(self.watcher.serve)
                if (probe := probe_from_env()) is not None:  # benchmarks only: the loop's lag and what held it
                    tg.start_soon(probe.serve)
                tg.start_soon(watchdog)
                tg.start_soon(EngineHealth().watch, self.engine_status)
                tg.start_soon(self.orphan_watch.serve, lambda: self.engines)
                tg.start_soon(self.ops.serve, lambda: self.limiter.in_use)
                for sweep_id, status, config in await self._unfinished():
                    log.info("resuming sweep %s (%s when the daemon last stopped)", sweep_id, status)
                    await self._start(sweep_id, config, paused=status == "paused")
                notify("READY=1")
                print(f"staminad: serving {self.socket_path}", file=sys.stderr, flush=True)
                task_status.started()
                await self._stop.wait()
                notify("STOPPING=1")
                await self._shutdown()
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                if self.watcher is not None:
                    self.watcher.close()
                if self.store is not None:
                    await self.store.close()
                if socket_ours:
                    self.socket_path.unlink(missing_ok=True)
            os.close(lock_fd)
            log.info("stopped")
            if self.exit_timer is not None:
                self.exit_timer.cancel()
            logs.close()

    def stop(self, drain: bool = False) -> None:
        log.info("stop requested%s", " (drain: running attempts finish first)" if drain else "")
        self._drain = self._drain or drain
        self._stop.set()

    async def _shutdown(self) -> None:
        """Stop starting attempts; with drain, wait for running ones; then leave harnesses for the restart."""
        for r in self.running.values():
            r.gate.pause()
        if self._drain:
            with anyio.move_on_after(24 * 3600):
                while any(r.gate.active for r in self.running.values()):  # a resumed attempt may still enter
                    for r in list(self.running.values()):
                        await r.gate.idle()
        self.detach.set()
        # Whatever a sweep's clean-up waits on, the process ends: see `stopbound`.
        self.exit_timer = ExitTimer(self.stop_timeout + EXIT_GRACE).start()
        for r in list(self.running.values()):
            r.scope.cancel()
        await wait_for_sweeps(self.running.values(), self.stop_timeout)

    async def _unfinished(self) -> list[tuple[str, str, bytes]]:
        assert self.store is not None
        return [(s.id, s.status, s.config.encode()) for s in await sweeps.unfinished_sweeps(self.store)]

    async def _client(self, stream: ByteStream) -> None:
        await serve_client(self, stream)

    # --- what the running sweeps hold -------------------------------------------------------------

    def engine_status(self) -> list[EngineInfo]:
        """Every engine the running sweeps are spread over, once each, as their pools see it now."""
        seen: dict[str, EngineInfo] = {}
        for run in list(self.running.values()):
            for e in engines_of(run.factory):
                seen.setdefault(e.url, e)
        return list(seen.values())

    def with_slots(self, info: SweepInfo) -> SweepInfo:
        """The sweep's figures with its limit, the scenarios holding and awaiting a slot now, and the engines
        it is spread over (their slots and health); a sweep whose writes wait on the state disk is `paused`."""
        parallel = self.limiter.caps.get(info.sweep, 0)
        run = self.running.get(info.sweep)
        engines = engines_of(run.factory) if run is not None else ()
        if run is not None and self.store is not None and self.store.space.stalled(info.sweep):
            # Its writes wait on a full (or read-only) state disk: paused until space returns, and why.
            info = msgspec.structs.replace(info, status="paused", reason=self.store.space.stall)
        down = [e for e in engines if e.down_since and e.waiting]
        if run is not None and down and info.status == "running":
            # Its scenarios wait for an engine that stopped answering: paused until it does (`sandbox.outage`).
            e = down[0]
            why = f"engine {e.url} does not answer ({e.detail}): {outage_line(e, time.time())}"
            info = msgspec.structs.replace(info, status="paused", reason=why)
        return msgspec.structs.replace(
            info,
            parallel=parallel,
            # Scenarios held at a pause keep their slot, but run nothing: not counted as running.
            active=max(0, self.limiter.held.get(info.sweep, 0) - (run.gate.held if run is not None else 0)),
            queued=self.limiter.waiting(info.sweep),
            engines=engines,
            expanding=self.expanding.get(info.sweep, (0, 0))[0],
            expand_total=self.expanding.get(info.sweep, (0, 0))[1],
        )

    async def ops_report(self, history: int) -> OpsReport:
        """The box at a glance (`staminad.daemon.ops`), with up to `history` points of its recent past."""
        assert self.store is not None
        infos = await sweep_infos(self.store, self.with_slots)
        found = await report(self.store, self.ops, infos, self.limiter, history, self.expanding)
        return msgspec.structs.replace(found, orphans=self.orphan_watch.orphans)


__all__ = ["VERSION", "Daemon", "DaemonError"]
