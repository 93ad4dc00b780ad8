"""One scenario job of a sweep, in its slot, and the parts every job runs with.

`Shared` is what a long-running daemon shares across sweeps, `Plan` what the sweep file (or its pack)
says to run, `Parts` the sweep-wide parts a job runs with. A bug of ours inside one scenario ends that
scenario (`internal_error`, re-runnable), never its neighbours (`engine.contain`); a full state disk
makes the job wait for space and take the scenario up again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream

from protocol.errors import leaves
from staminad.agents.base import adapter_for
from staminad.bench.pack import Pack
from staminad.bench.scenario import ScenarioParams
from staminad.engine import contain
from staminad.engine.access import ModelAccess
from staminad.engine.config import Configuration
from staminad.engine.fair import FairLimiter
from staminad.engine.gate import Gate
from staminad.engine.markers import MarkerWatcher
from staminad.engine.scenario import ScenarioRunner
from staminad.engine.spec import EngineSettings, EventSink, ScenarioSpec
from staminad.engine.turns import HeldScenario, generated
from staminad.sandbox.base import Grant, SandboxFactory
from staminad.suite.pool import WorkerPool, run_sync
from state.space import disk_problem
from state.store import Store


class Shared(msgspec.Struct, kw_only=True):
    """Parts a long-running daemon shares across sweeps (an in-process run makes its own)."""

    store: Store
    watcher: MarkerWatcher
    limiter: FairLimiter
    gate: Gate | None = None
    suites: anyio.CapacityLimiter | None = None  # concurrent server starts + suite runs, daemon-wide
    workers: WorkerPool | None = None  # worker processes for suites and their generation (None: threads)
    # Set on a graceful daemon stop: harnesses keep running in their sandboxes for the restart to pick up.
    detach: anyio.Event = msgspec.field(default_factory=anyio.Event)
    # Scenario ids an operator retried while the sweep runs (see `Daemon.retry_scenario`).
    requeue: MemoryObjectReceiveStream[int] | None = None
    # Sweeps still being laid out: (scenarios recorded, total), kept current here for the daemon's status.
    expanding: dict[str, tuple[int, int]] = msgspec.field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    """What the sweep file (or its pack) says to run; each scenario is generated (`held`) only as it starts."""

    params: ScenarioParams
    seeds: list[int]
    pack: Pack | None
    readme: str
    settings: EngineSettings

    async def held(self, seed: int) -> HeldScenario:
        """The scenario of `seed` as a running job holds it (`engine.turns`): read from the pack in a thread, or
        generated in one of the daemon's worker processes (a thread without them)."""
        if self.pack is not None:
            pack = self.pack
            return await anyio.to_thread.run_sync(lambda: HeldScenario.of(pack.scenario(seed)), abandon_on_cancel=True)
        seed_, initial, batches = await run_sync(generated, seed, msgspec.to_builtins(self.params))
        return HeldScenario(seed=seed_, initial_bytes=initial, batches=tuple(batches))


@dataclass(frozen=True)
class Parts:
    """The sweep-wide parts every scenario job runs with."""

    shared: Shared
    make_sandbox: SandboxFactory
    emit: EventSink
    settings: EngineSettings


@dataclass(frozen=True)
class Job:
    """One scenario to run: its spec, configuration, sandbox root, granted infra retries and model route."""

    scenario_id: int
    spec: ScenarioSpec
    config: Configuration
    root: Path
    infra_grant: int
    llm: ModelAccess | None


async def run_job(parts: Parts, job: Job) -> None:
    """One scenario job in its slot; a bug of ours inside it ends this scenario alone (`engine.contain`). A full
    (or read-only) state disk under its sandbox is not a bug: the job waits for space and takes the scenario up
    again from its last recorded step, as a restarted daemon would."""
    store = parts.shared.store
    async with parts.shared.limiter.slot(job.root.parent.name):
        while True:
            try:
                await _scenario(parts, job)
                return
            except Exception as exc:  # noqa: BLE001 - not a cancel (BaseException): raised here, it would cancel every neighbour
                problem = _disk_problem(exc, job.root, store.space.path)
                if problem is not None:
                    await store.space.wait(problem)
                    continue
                seed = job.spec.scenario.seed
                await contain.end_scenario(store, parts.emit, job.scenario_id, job.spec.config_name, seed, exc)
                return


def _disk_problem(exc: Exception, root: Path, state_dir: Path) -> str | None:
    """ "disk full" / "disk read-only" when every cause of `exc` is the state disk refusing a write (the sandbox
    `root` on the state directory's file system), else None."""
    found = [disk_problem(leaf, state_dir) for leaf in leaves(exc)]
    if not found or None in found:
        return None
    try:
        same = (root.parent if root.parent.exists() else state_dir).stat().st_dev == state_dir.stat().st_dev
    except OSError:
        return None
    return found[0] if same else None


async def _scenario(parts: Parts, job: Job) -> None:
    """Run the scenario in its sandbox, closed after unless a graceful daemon stop detaches it."""
    shared = parts.shared
    adapter = adapter_for(job.config.agent)
    sandbox = parts.make_sandbox(
        job.root,
        f"{job.config.name}/{job.spec.scenario.seed}",
        Grant(layer=adapter.layer(), llm=job.llm is not None, image=adapter.image),
    )
    await shared.store.set_sandbox(job.scenario_id, sandbox.describe())
    runner = ScenarioRunner(
        job.spec,
        shared.store,
        sandbox,
        adapter,
        shared.watcher,
        parts.settings,
        parts.emit,
        shared.gate,
        shared.suites,
        job.llm,
        shared.workers,
    )
    try:
        await runner.run(job.scenario_id, job.infra_grant)
    finally:
        if not shared.detach.is_set():  # a graceful daemon stop leaves detached harnesses running
            with anyio.CancelScope(shield=True):
                await sandbox.close()


__all__ = ["Job", "Parts", "Plan", "Shared", "run_job"]
