"""The operator's actions on sweeps, as the daemon takes them: submit, pause, resume, cancel, retry a scenario; and
each sweep's run as a task of the daemon's, to its end or its failure.

`SweepControl` is the part of `staminad.daemon.service.Daemon` that starts and steers sweeps; the daemon's life cycle
(lock, socket, resume on start, shutdown) and the figures it shows of them are the service's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import msgspec

from protocol.errors import ExpectedError, leaves
from protocol.events import FINAL, EventData, SweepFailed, SweepFinished, SweepRuntime
from staminad.bench.pack import Pack, PackError
from staminad.daemon import resubmit, views
from staminad.daemon.bus import EventBus
from staminad.daemon.logs import log, log_event
from staminad.daemon.running import Running, failure_reason
from staminad.engine.config import SweepError, SweepFile, fingerprint, parse_sweep
from staminad.engine.fair import FairLimiter
from staminad.engine.gate import Gate
from staminad.engine.jobs import Shared
from staminad.engine.markers import MarkerWatcher
from staminad.engine.sweep import run_sweep
from staminad.packio import read_pack
from staminad.sandbox.docker.enginespec import EngineSpec
from staminad.sandbox.ports import PortAllocator
from staminad.suite.pool import WorkerPool
from state import sweeps
from state.space import writer
from state.store import Store

if TYPE_CHECKING:
    from staminad.sandbox.docker.enginepool import Slots


class SweepControl:
    """Starts, steers and runs the daemon's sweeps; the attributes below are the daemon's (`Daemon.__init__`)."""

    state_dir: Path
    store: Store | None
    watcher: MarkerWatcher | None
    bus: EventBus
    runtime: str | None
    ports: PortAllocator
    engines: list[EngineSpec]
    engine_slots: dict[str, Slots]
    limiter: FairLimiter
    suites: anyio.CapacityLimiter
    workers: WorkerPool | None
    running: dict[str, Running]
    detach: anyio.Event
    expanding: dict[str, tuple[int, int]]
    _tg: anyio.abc.TaskGroup | None

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
        run = Running(sweep_id, gate)
        self.running[sweep_id] = run
        self._tg.start_soon(self._run_sweep, sweep, run)

    async def _run_sweep(self, sweep: SweepFile, run: Running) -> None:
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

    async def _status(self, sweep_id: str) -> str | None:
        assert self.store is not None
        found = await sweeps.find_sweep(self.store, sweep_id)
        return None if found is None else found.status

    async def sweep_ids(self) -> list[str]:
        assert self.store is not None
        return await sweeps.sweep_ids(self.store)


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
