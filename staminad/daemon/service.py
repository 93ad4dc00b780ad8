"""staminad as a service: one instance per state directory, a control socket, sweeps run on request.

Start-up takes an exclusive lock on `staminad.lock` (so replacing a stale socket file is safe),
opens the store, resumes every sweep recorded as running or paused, binds the Unix socket (mode
0600 unless configured; with a socket group the state directory is shared with it, see `access.py`)
and only then reports ready. A graceful stop lets detached harnesses run
on, so a restart picks them up from their markers; `drain` first lets running attempts finish.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
from anyio.abc import ByteStream, TaskStatus

from protocol import EngineInfo, ErrorReply, OpsReport, SweepInfo, encoder
from protocol.errors import ExpectedError, describe, leaves
from protocol.events import FINAL, EventData, SweepFailed, SweepFinished, SweepRuntime
from protocol.framing import frame
from protocol.paths import clear_stale_socket, socket_path
from protocol.stream import connection_cap, serve_unix
from staminad.bench.pack import Pack, PackError
from staminad.daemon import resubmit, views
from staminad.daemon.access import share_socket, share_state_dir
from staminad.daemon.bus import EventBus
from staminad.daemon.connection import IDLE_TIMEOUT, VERSION, serve_client
from staminad.daemon.logs import EngineHealth, daemon_logging, log, log_event
from staminad.daemon.loopprobe import probe_from_env
from staminad.daemon.notify import notify, watchdog
from staminad.daemon.ops import OpsRing, report, sweep_infos
from staminad.engine.config import SweepError, SweepFile, fingerprint, parse_sweep
from staminad.engine.fair import FairLimiter
from staminad.engine.markers import MarkerWatcher
from staminad.engine.scenario import Gate
from staminad.engine.sweep import Shared, run_sweep
from staminad.packio import read_pack
from staminad.sandbox.docker.enginespec import EngineSpec
from staminad.sandbox.ports import PortAllocator
from staminad.suite.pool import WorkerPool
from state import sweeps
from state.lock import StateDirError, lock_state_dir
from state.space import writer
from state.store import Store

if TYPE_CHECKING:
    from staminad.sandbox.docker.enginepool import Slots


class DaemonError(RuntimeError):
    """The daemon cannot start (already running, unusable state directory)."""


class _Running:
    def __init__(self, name: str, gate: Gate) -> None:
        self.name, self.gate = name, gate
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        # Unbounded: an operator's retries are few, and a full buffer must never refuse one.
        self.requeue, self.requeued = anyio.create_memory_object_stream[int](math.inf)
        self.factory: Any = None  # its runtime, once chosen (an EnginePool tells which engine holds what)

    def close(self) -> None:
        """Close both ends of the requeue stream once the sweep is not running: a later retry starts it anew."""
        self.requeue.close()
        self.requeued.close()


class Daemon:
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
    ) -> None:
        self.state_dir = state_dir
        self.log_to_stderr = log_to_stderr
        self.socket_path = socket_path(state_dir)  # refused in one line if the path is too long for a socket
        self.socket_mode, self.socket_group, self.runtime = socket_mode, socket_group, runtime
        self.bus = EventBus()
        self.metrics_port = metrics_port
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
        self.running: dict[str, _Running] = {}
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
                self.metrics.serve(self.metrics_port)
            if self.socket_group:  # before the log and the store are made in it: they take its group
                share_state_dir(self.state_dir, self.socket_group)
            logs.enter_context(daemon_logging(self.state_dir, stderr=self.log_to_stderr))
            log.info("starting on %s (pid %d)", self.state_dir, os.getpid())
            self.store = await Store.open(self.state_dir / "staminad.db")
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
        for r in list(self.running.values()):
            r.scope.cancel()
            with anyio.move_on_after(30):
                await r.done.wait()

    async def _unfinished(self) -> list[tuple[str, str, bytes]]:
        assert self.store is not None
        return [(s.id, s.status, s.config.encode()) for s in await sweeps.unfinished_sweeps(self.store)]

    async def _client(self, stream: ByteStream) -> None:
        await serve_client(self, stream)

    # --- sweeps -------------------------------------------------------------------------------

    async def submit(
        self, toml_text: str, base_dir: str, source: str = "", force_new: bool = False, paused: bool = False
    ) -> str:
        assert self.store is not None
        base = Path(base_dir or self.state_dir)
        path = base / (Path(source).name if source else "submitted.toml")
        sweep, fingerprint = parse_sweep(toml_text.encode(), path)
        if sweep.scenarios.pack:  # checked as `staminad run` checks it: refused now, not an `error` later
            await _check_pack(Path(sweep.scenarios.pack), path)
        run = self.running.get(sweep.name)
        if run is not None and await self._status(sweep.name) in ("finished", "cancelled", "error"):
            with anyio.move_on_after(30):  # its task is only winding down: its status is final
                await run.done.wait()
        if sweep.name in self.running:
            if not force_new:
                await resubmit.check(self.store, sweep, fingerprint, path, False, self.state_dir)  # what changed
            raise SweepError(
                f"{path}: sweep {sweep.name} is already running (cancel it first, or give the file a new `name`)"
            )
        replaced = await resubmit.check(self.store, sweep, fingerprint, path, force_new, self.state_dir)
        config = msgspec.json.encode(sweep)
        await self.store.ensure_sweep(sweep.name, sweep.name, fingerprint, config.decode())
        await self.store.set_sweep_status(sweep.name, "paused" if paused else "running")
        await self._start(sweep.name, config, paused=paused)
        log.info(
            "submitted sweep %s from %s%s%s",
            sweep.name,
            path,
            " (replacing the stored one)" if replaced else "",
            " paused" if paused else "",
        )
        return f"{sweep.name} (replaced the stored sweep of that name)" if replaced else sweep.name

    async def _start(self, sweep_id: str, config: bytes, paused: bool) -> None:
        assert self._tg is not None
        sweep = msgspec.json.decode(config, type=SweepFile)
        gate = Gate()
        if paused:
            gate.pause()
        run = _Running(sweep_id, gate)
        self.running[sweep_id] = run
        self._tg.start_soon(self._run_sweep, sweep, run)

    async def _run_sweep(self, sweep: SweepFile, run: _Running) -> None:
        assert self.store is not None and self.watcher is not None
        from staminad.engine.config import sweep_images
        from staminad.engine.runtime import choose_runtime

        def emit(data: EventData) -> None:
            self.bus.publish(sweep.name, data)
            log_event(sweep.name, data)

        writer.set(sweep.name)  # this task's (and its children's) store writes are the sweep's: see `with_slots`
        try:
            with run.scope:
                pack = await _read_pack(Path(sweep.scenarios.pack)) if sweep.scenarios.pack else None
                factory, chosen = await choose_runtime(
                    self.runtime or sweep.run.runtime,
                    sweep.run,
                    self.ports,
                    sweep_images(sweep),
                    self.engines,
                    self.engine_slots,
                )
                run.factory = factory
                emit(SweepRuntime(runtime=chosen))
                self.limiter.caps[sweep.name] = sweep.run.parallel  # the sweep's own limit, inside the daemon's
                shared = Shared(
                    store=self.store,
                    watcher=self.watcher,
                    limiter=self.limiter,
                    gate=run.gate,
                    suites=self.suites,
                    workers=self.workers,
                    detach=self.detach,
                    requeue=run.requeued,
                    expanding=self.expanding,
                )
                while True:
                    await run_sweep(sweep, fingerprint(sweep), self.state_dir, factory, emit, pack, shared)
                    # A scenario retried just as the last job ended was not picked up: run the sweep again.
                    if all(r.status in FINAL for _, r in await self.store.scenarios(sweep.name)):
                        break
                    await self.store.set_sweep_status(sweep.name, "running")
                emit(SweepFinished())
                log.info("sweep %s finished", sweep.name)
        except Exception as exc:  # noqa: BLE001 - one sweep's failure (bad pack, no runtime) must not stop the daemon
            if isinstance(exc, ExpectedError):
                log.error("sweep %s failed: %s", sweep.name, exc)
            else:
                log.exception("sweep %s failed", sweep.name)
            reason = failure_reason(exc)
            emit(SweepFailed(error=reason))
            with anyio.CancelScope(shield=True):
                await self.store.set_sweep_status(sweep.name, "error", reason=reason)
                await self._stopped_scenarios(sweep.name, f"sweep error: {type(leaves(exc)[0]).__name__}")
        finally:
            disconnect = getattr(run.factory, "disconnect", None)
            if self.detach.is_set() and disconnect is not None:  # the sweep's end reaped nothing: close its connections
                with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                    await disconnect()
            run.done.set()
            self.running.pop(sweep.name, None)
            self.limiter.caps.pop(sweep.name, None)
            run.close()

    async def cancel(self, sweep_id: str) -> None:
        assert self.store is not None
        run = self.running.get(sweep_id)
        if run is None:
            raise SweepError(f"sweep {sweep_id} is not running")
        await self.store.set_sweep_status(sweep_id, "cancelled")
        log.info("cancelling sweep %s", sweep_id)
        run.scope.cancel()
        with anyio.move_on_after(60):
            await run.done.wait()
        await self._stopped_scenarios(sweep_id, "sweep cancelled")

    async def _stopped_scenarios(self, sweep_id: str, reason: str) -> None:
        """Scenarios a cancelled or failed sweep left `running` go back to `pending`, saying why."""
        assert self.store is not None
        await sweeps.release_running(self.store, sweep_id, reason)

    async def pause(self, sweep_id: str, paused: bool) -> None:
        assert self.store is not None
        run = self.running.get(sweep_id)
        if run is None:
            raise SweepError(f"sweep {sweep_id} is not running")
        run.gate.pause() if paused else run.gate.resume()
        log.info("%s sweep %s", "paused" if paused else "resumed", sweep_id)
        await self.store.set_sweep_status(sweep_id, "paused" if paused else "running")

    async def retry_scenario(self, sweep_id: str, configuration: str, seed: int) -> str:
        """Grant an `infra_failed` scenario another round of infra retries and run it again."""
        assert self.store is not None
        row = await views.find_scenario(self.store, sweep_id, configuration, seed)
        if row.status != "infra_failed":
            raise SweepError(
                f"scenario {configuration}/{seed} is {row.status}; only one that used up its infra "
                "retries (infra_failed) can be retried"
            )
        found = await sweeps.find_sweep(self.store, sweep_id)
        assert found is not None
        sweep = msgspec.json.decode(found.config, type=SweepFile)
        extra = max(sweep.run.infra_retries, 1)  # a sweep run with no infra retries still gets this one
        await self.store.grant_infra_retries(row.id, extra)
        log.info("retrying %s/%s of sweep %s with %d more infra retries", configuration, seed, sweep_id, extra)
        run = self.running.get(sweep_id)
        if run is not None:
            run.requeue.send_nowait(row.id)  # taken by the running sweep, or by `_run_sweep`'s next round
        else:
            await self.store.set_sweep_status(sweep_id, "running")
            await self._start(sweep_id, found.config.encode(), paused=False)
        return f"retrying {configuration}/{seed} with {extra} more infra retries"

    def engine_status(self) -> list[EngineInfo]:
        """Every engine the running sweeps are spread over, once each, as their pools see it now."""
        seen: dict[str, EngineInfo] = {}
        for run in list(self.running.values()):
            status = getattr(run.factory, "status", None)
            for e in status() if status is not None else ():
                seen.setdefault(e.url, EngineInfo(**msgspec.structs.asdict(e)))
        return list(seen.values())

    def with_slots(self, info: SweepInfo) -> SweepInfo:
        """The sweep's figures with its limit, the scenarios holding and awaiting a slot now, and the engines
        it is spread over (their slots and health); a sweep whose writes wait on the state disk is `paused`."""
        parallel = self.limiter.caps.get(info.sweep, 0)
        run = self.running.get(info.sweep)
        status = getattr(run.factory, "status", None) if run is not None else None
        engines = tuple(EngineInfo(**msgspec.structs.asdict(e)) for e in status()) if status is not None else ()
        if run is not None and self.store is not None and self.store.space.stalled(info.sweep):
            # Its writes wait on a full (or read-only) state disk: paused until space returns, and why.
            info = msgspec.structs.replace(info, status="paused", reason=self.store.space.stall)
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
        return await report(self.store, self.ops, infos, self.limiter, history, self.expanding)

    async def _status(self, sweep_id: str) -> str | None:
        assert self.store is not None
        found = await sweeps.find_sweep(self.store, sweep_id)
        return None if found is None else found.status

    async def sweep_ids(self) -> list[str]:
        assert self.store is not None
        return await sweeps.sweep_ids(self.store)


REASON_LIMIT = 300  # characters of a failed sweep's reason that are kept (the log has it whole)
REASON_CAUSES = 5  # a task group's failures named in the reason; the rest are counted


def failure_reason(exc: BaseException) -> str:
    """Why a sweep failed, in one bounded line: each cause inside a task group's wrapper, as `staminad run` says it."""
    found = leaves(exc)
    text = "; ".join(describe(leaf) for leaf in found[:REASON_CAUSES])
    if len(found) > REASON_CAUSES:
        text += f"; and {len(found) - REASON_CAUSES} more"
    line = " ".join(text.split()) or type(exc).__name__
    return line if len(line) <= REASON_LIMIT else line[: REASON_LIMIT - 3] + "..."


async def _read_pack(directory: Path) -> Pack:
    """Read and verify a pack off the event loop (hashing a large pack takes a while)."""
    return await anyio.to_thread.run_sync(read_pack, directory, abandon_on_cancel=True)


async def _check_pack(directory: Path, source: Path) -> None:
    try:
        await _read_pack(directory)
    except PackError as exc:
        raise SweepError(f"{source}: scenarios.pack: {exc}") from None
    except OSError as exc:
        raise SweepError(
            f"{source}: scenarios.pack: cannot read {exc.filename or directory}: {exc.strerror or exc}"
        ) from None


__all__ = ["VERSION", "Daemon", "DaemonError", "failure_reason"]
