"""Runs a sweep in process: every configuration x scenario, `parallel` at a time, recorded in the store.

A sweep that is run again with the same name and configuration resumes: finished scenarios are
skipped and unfinished ones continue from their last recorded step. A bug of ours inside one
scenario ends that scenario (`internal_error`, re-runnable), never its neighbours (`engine.contain`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream

from protocol.errors import leaves
from protocol.events import FINAL, SweepStarted
from protocol.messages import ConfigStatus
from staminad.agents.base import adapter_for
from staminad.bench.pack import Pack
from staminad.bench.readme import render_readme
from staminad.bench.scenario import Scenario, ScenarioParams, generate
from staminad.bench.seeds import seed_list
from staminad.engine import contain
from staminad.engine.config import Configuration, SweepFile, configurations
from staminad.engine.fair import FairLimiter
from staminad.engine.markers import MarkerWatcher
from staminad.engine.models import ModelSpec, sweep_models
from staminad.engine.scenario import EngineSettings, EventSink, Gate, ModelAccess, ScenarioRunner, ScenarioSpec
from staminad.engine.score import config_tally, counts_text, score_text, standing, tally
from staminad.gateway.proxy import Call, Gateway, Limits, Upstream
from staminad.sandbox.base import Grant, SandboxFactory
from staminad.suite.pool import WorkerPool
from state.figures import sweep_figures
from state.space import disk_problem
from state.store import Store

# One shape for a configuration's figures: what the engine summarises is what the socket sends.
ConfigSummary = ConfigStatus


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
class _Plan:
    """What the sweep file (or its pack) says to run; each scenario is generated (`make`) only as it starts."""

    params: ScenarioParams
    seeds: list[int]
    pack: Pack | None
    readme: str
    settings: EngineSettings

    def make(self, seed: int) -> Scenario:
        return self.pack.scenario(seed) if self.pack else generate(seed, self.params)


@dataclass(frozen=True)
class _Parts:
    """The sweep-wide parts every scenario job runs with."""

    shared: Shared
    make_sandbox: SandboxFactory
    emit: EventSink
    settings: EngineSettings


@dataclass(frozen=True)
class _Job:
    """One scenario to run: its spec, configuration, sandbox root, granted infra retries and model route."""

    scenario_id: int
    spec: ScenarioSpec
    config: Configuration
    root: Path
    infra_grant: int
    llm: ModelAccess | None


async def run_sweep(
    sweep: SweepFile,
    fingerprint: str,
    state_dir: Path,
    make_sandbox: SandboxFactory,
    emit: EventSink,
    pack: Pack | None = None,
    shared: Shared | None = None,
) -> list[ConfigSummary]:
    """Run (or resume) the sweep: on the daemon's `shared` parts, or on its own store and watcher."""
    plan = await _plan(sweep, pack)
    if shared is not None:
        return await _run(sweep, fingerprint, state_dir, plan, _Parts(shared, make_sandbox, emit, plan.settings))
    store = await Store.open(state_dir / "staminad.db")
    watcher = MarkerWatcher()
    try:
        own = Shared(store=store, watcher=watcher, limiter=FairLimiter(sweep.run.parallel))
        async with anyio.create_task_group() as tg:
            tg.start_soon(watcher.serve)
            result = await _run(sweep, fingerprint, state_dir, plan, _Parts(own, make_sandbox, emit, plan.settings))
            tg.cancel_scope.cancel()
        return result
    finally:
        watcher.close()
        with anyio.CancelScope(shield=True):
            await store.close()


async def _plan(sweep: SweepFile, pack: Pack | None) -> _Plan:
    src = sweep.scenarios
    params = (
        pack.params
        if pack
        else ScenarioParams(
            turns=src.turns,
            sampler=src.sampler,
            naming=src.naming,
            changes_per_turn=src.changes_per_turn,
            language=src.language,
        )
    )
    seeds = list(pack.manifest.seeds) if pack else seed_list(src.seeds)
    settings = EngineSettings(
        turn_timeout=sweep.run.turn_timeout,
        request_timeout=sweep.run.request_timeout,
        server_start_timeout=sweep.run.server_start_timeout,
        infra_retries=sweep.run.infra_retries,
    )
    return _Plan(params=params, seeds=seeds, pack=pack, readme=render_readme(params.language), settings=settings)


async def _run(sweep: SweepFile, fingerprint: str, state_dir: Path, plan: _Plan, parts: _Parts) -> list[ConfigSummary]:
    """Record the sweep, start every unfinished scenario (and any an operator retries meanwhile), summarise."""
    store = parts.shared.store
    try:
        await store.ensure_sweep(sweep.name, sweep.name, fingerprint, msgspec.json.encode(sweep).decode())
        await store.set_sweep_turns(sweep.name, plan.params.turns)
        # Resumed means an earlier run got as far as recording scenarios (a restart, a retry, a second run):
        # the sweep row alone says nothing, as the daemon records it when the sweep is submitted.
        recorded = await store.scenarios(sweep.name)
        resumed = bool(recorded)
        finished = sum(r.status in FINAL for _, r in recorded)
        parts.emit(
            SweepStarted(
                sweep=sweep.name,
                resumed=resumed,
                scenarios=len(plan.seeds),
                configurations=len(configurations(sweep)),
                finished=finished,
            )
        )
        async with anyio.create_task_group() as outer:
            gateway = await _start_gateway(sweep, store, parts.make_sandbox, parts.emit, outer)
            async with anyio.create_task_group() as jobs:
                starter = _Starter(sweep, parts, gateway, jobs, await store.llm_spend(sweep.name) if gateway else {})
                await _prepare(sweep, state_dir, plan, store, starter)
                requeue = parts.shared.requeue
                if requeue is not None and starter.live.count:
                    jobs.start_soon(_requeued, requeue, starter, store)
            outer.cancel_scope.cancel()
        await store.set_sweep_status(sweep.name, "finished")
        return await summarize(store, sweep.name)
    finally:
        if not parts.shared.detach.is_set():
            with anyio.CancelScope(shield=True):
                await parts.make_sandbox.aclose(state_dir / "sandboxes" / sweep.name)


class _Starter:
    """Starts scenario jobs in the sweep's task group, each with its model route when it runs a real harness."""

    def __init__(
        self,
        sweep: SweepFile,
        parts: _Parts,
        gateway: Gateway | None,
        jobs: anyio.abc.TaskGroup,
        spend: dict[int, float],
    ) -> None:
        self.sweep, self.parts, self.gateway, self.jobs, self.spend = sweep, parts, gateway, jobs, spend
        self.live = _Live()
        # Per recorded scenario: its configuration id, configuration, seed and sandbox root (a few hundred
        # bytes); the scenario itself (~100 KB) is generated only when its job starts, and dropped when it ends.
        self.prepared: dict[int, tuple[int, Configuration, int, Path]] = {}
        self.plan: _Plan | None = None
        self.models = {m.name: m for m in sweep_models(sweep.llm)}

    async def start(self, scenario_id: int, infra_grant: int) -> None:
        config_id, config, seed, root = self.prepared[scenario_id]
        assert self.plan is not None
        plan = self.plan
        # Off the event loop: generating a scenario of many turns takes a while.
        scenario = await anyio.to_thread.run_sync(plan.make, seed, abandon_on_cancel=True)
        spec = ScenarioSpec(
            config_id=config_id,
            config_name=config.name,
            retries=config.retries,
            feedback=config.feedback,
            scenario=scenario,
            language=plan.params.language,
            readme=plan.readme,
        )
        self.live.count += 1
        llm = None
        if self.gateway is not None and config.model in self.models and adapter_for(config.agent).harness:
            model = self.models[config.model]
            spent = self.spend.get(scenario_id, 0.0)
            route = self.gateway.route(self.sweep.name, scenario_id, spent, upstream_of(model))
            llm = ModelAccess(self.gateway, route, model.name, model.context_window, model.compact_at)
        job = _Job(scenario_id=scenario_id, spec=spec, config=config, root=root, infra_grant=infra_grant, llm=llm)
        self.jobs.start_soon(self.live.track, _one(self.parts, job))


def window(parallel: int) -> int:
    """Scenario jobs a sweep holds at once (running or awaiting a slot): what bounds its memory while it expands."""
    return max(2 * parallel, 8)


async def _prepare(sweep: SweepFile, state_dir: Path, plan: _Plan, store: Store, starter: _Starter) -> None:
    """Record every configuration x seed and start the scenarios not yet finished, lazily: a scenario is recorded
    and generated only once fewer than `window` jobs are live, so a sweep of 100,000 holds `window` scenarios in
    memory, not 100,000; `Shared.expanding` says how far it got meanwhile."""
    configs = configurations(sweep)
    total, done = len(configs) * len(plan.seeds), 0
    expanding = starter.parts.shared.expanding
    starter.plan = plan
    limit = window(sweep.run.parallel)
    try:
        for config in configs:
            config_id = await store.ensure_configuration(
                sweep.name, config.name, config.agent, config.retries, config.feedback, config.model
            )
            for seed in plan.seeds:
                expanding[sweep.name] = (done, total)
                await starter.live.below(limit)
                row = await store.ensure_scenario(config_id, seed)
                done += 1
                root = state_dir / "sandboxes" / sweep.name / f"c{config_id}-s{seed}"
                starter.prepared[row.id] = (config_id, config, seed, root)
                if row.status not in FINAL:
                    await starter.start(row.id, row.infra_grant)
    finally:
        expanding.pop(sweep.name, None)


class _Live:
    """Counts running scenario jobs; when the last ends, stops listening for requeued ones."""

    def __init__(self) -> None:
        self.count = 0
        self.listener = anyio.CancelScope()
        self.freed = anyio.Event()

    async def below(self, limit: int) -> None:
        """Wait until fewer than `limit` jobs are live."""
        while self.count >= limit:
            self.freed = anyio.Event()
            await self.freed.wait()

    async def track(self, job: Awaitable[None]) -> None:
        try:
            await job
        finally:
            self.count -= 1
            self.freed.set()
            if self.count == 0:
                self.listener.cancel()


async def _requeued(requeue: MemoryObjectReceiveStream[int], starter: _Starter, store: Store) -> None:
    """Start scenarios retried while the sweep runs; one retried after the last job ended is left to the caller."""
    with starter.live.listener:
        async for scenario_id in requeue:
            if scenario_id in starter.prepared:
                config_id, _, seed, _ = starter.prepared[scenario_id]
                row = await store.ensure_scenario(config_id, seed)
                if row.status not in FINAL and row.status != "running":
                    await starter.start(scenario_id, row.infra_grant)


async def _one(parts: _Parts, job: _Job) -> None:
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


async def _scenario(parts: _Parts, job: _Job) -> None:
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


def upstream_of(model: ModelSpec) -> Upstream:
    """The gateway's way to a model: its endpoint, its key from the daemon's environment, its price and limit."""
    key = os.environ.get(model.api_key_env, "") if model.api_key_env else ""
    return Upstream(model.endpoint, key, model.price, model.concurrency)


async def _start_gateway(
    sweep: SweepFile, store: Store, make_sandbox: SandboxFactory, emit: EventSink, tg: anyio.abc.TaskGroup
) -> Gateway | None:
    """Serve the sweep's LLM gateway if any configuration runs a real harness (None otherwise)."""
    llm = sweep.llm
    if llm is None or not any(adapter_for(c.agent).harness for c in configurations(sweep)):
        return None

    async def record(call: Call) -> None:
        await store.llm_call(
            call.scenario_id,
            call.attempt_id,
            call.turn,
            call.api,
            call.model,
            (call.usage.input, call.usage.output, call.usage.cached),
            call.cost,
            call.status,
            call.seconds,
            call.waited,
            call.streamed,
            call.estimated,
        )

    limits = Limits(
        scenario_cost_cap=llm.scenario_cost_cap,
        sweep_cost_cap=llm.sweep_cost_cap,
        outage_timeout=llm.outage_timeout,
        stream_idle_timeout=llm.stream_idle_timeout,
        first_byte_timeout=llm.first_byte_timeout,
        concurrency=llm.concurrency,
    )
    first = upstream_of(sweep_models(llm)[0])  # each route names its own model's endpoint; this is a fallback
    gateway = Gateway(first.endpoint, first.api_key, dict(llm.pricing), limits, emit, record)
    await tg.start(gateway.serve, ["127.0.0.1", *await make_sandbox.llm_hosts()], 0)
    if gateway.port is not None:
        make_sandbox.llm_serving(gateway.port)  # the runtime opens its sandboxes' way to this port only
    return gateway


async def summarize(store: Store, sweep_id: str) -> list[ConfigSummary]:
    """Per configuration: turns passed over the scored scenarios, by the one rule every view counts by
    (`staminad.engine.score`): unfinished, never-run and unscored scenarios are counted apart, never averaged.
    Read in one hop off the event loop (`Store.read`), from rows per scenario, not per attempt."""
    return await store.read(summarize_in, sweep_id)


def summarize_in(conn: sqlite3.Connection, sweep_id: str) -> list[ConfigSummary]:
    figures = sweep_figures(conn, sweep_id)
    out = []
    for name in dict.fromkeys(r.configuration for r in figures.scenarios):
        mine = [r for r in figures.scenarios if r.configuration == name]
        t = tally((standing(r.status, r.end_kind, r.tested), r.turns_passed, r.status == "done") for r in mine)
        cost, tokens = figures.usage.get(name, (0.0, 0))
        statuses: dict[str, int] = {}
        for r in mine:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        out.append(
            ConfigSummary(
                name=name,
                scenarios=len(mine),
                finished=sum(r.status in FINAL for r in mine),
                mean_turns=t.mean or 0.0,
                se_turns=t.se or 0.0,
                pass_rate=t.pass_rate or 0.0,
                statuses=statuses,
                infra={k: v for (n, k), v in figures.infra.items() if n == name},
                cost=cost,
                tokens=tokens,
                unscored=t.unscored,
                scored=t.scored,
                unfinished=t.unfinished,
                never_run=t.never_run,
                model=figures.models.get(name, ""),
            )
        )
    return out


def format_summary(summaries: list[ConfigSummary]) -> str:
    """The end-of-run table: each configuration's score over its scored scenarios (`-` with none), and where
    the rest stand, by the one rule every view counts by (`staminad.engine.score`)."""
    width = max([len(s.name) for s in summaries] + [13])
    metered = any(s.tokens for s in summaries)
    lines = [
        f"{'configuration':<{width}}  {'turns passed (pass rate)':<24}  scenarios (status)            infra failures"
        + ("   tokens      cost" if metered else "")
    ]
    for s in summaries:
        t = config_tally(s)
        status = ", ".join(f"{k} {v}" for k, v in sorted(s.statuses.items())) + f"; {counts_text(t)}"
        infra = ", ".join(f"{k} {v}" for k, v in sorted(s.infra.items())) or "-"
        line = (
            f"{s.name:<{width}}  {score_text(t, '+-'):<24}  "
            f"{s.scenarios:3} ({status}){'':<{max(0, 26 - len(status))}}  {infra}"
        )
        if metered:
            line += f"{'':<{max(0, 16 - len(infra))}} {s.tokens:>9,} {s.cost:>8.2f} $"
        lines.append(line)
    return "\n".join(lines)


__all__ = [
    "ConfigSummary",
    "SandboxFactory",
    "Shared",
    "format_summary",
    "run_sweep",
    "summarize",
]
