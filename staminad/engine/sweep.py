"""Runs a sweep in process: every configuration x scenario, `parallel` at a time, recorded in the store.

A sweep that is run again with the same name and configuration resumes: finished scenarios are
skipped and unfinished ones continue from their last recorded step.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream

from staminad.agents.base import adapter_for
from staminad.bench.pack import Pack
from staminad.bench.readme import render_readme
from staminad.bench.scenario import ScenarioParams, generate
from staminad.commands.args import seed_list
from staminad.engine.config import Configuration, SweepFile, configurations
from staminad.engine.fair import FairLimiter
from staminad.engine.markers import MarkerWatcher
from staminad.engine.outcome import is_platform
from staminad.engine.ports import PortAllocator
from staminad.engine.scenario import EngineSettings, EventSink, Gate, ModelAccess, ScenarioRunner, ScenarioSpec
from staminad.gateway.proxy import Call, Gateway, Limits
from staminad.sandbox.base import Grant, Sandbox
from staminad.sandbox.local import LocalSandbox
from state.store import Store

FINAL = ("done", "failed", "infra_failed", "capped")


class ConfigSummary(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    scenarios: int
    finished: int
    mean_turns: float
    se_turns: float
    pass_rate: float
    statuses: dict[str, int]
    infra: dict[str, int]
    cost: float = 0.0  # US dollars through the gateway (0 without an [llm] table or a price)
    tokens: int = 0  # input + output tokens through the gateway
    unscored: int = 0  # scenarios ended by a platform fault: left out of the mean, re-runnable


class SandboxFactory(Protocol):
    def __call__(self, root: Path, label: str, grant: Grant = ...) -> Sandbox: ...


def local_factory(ports: PortAllocator) -> SandboxFactory:
    def make(root: Path, label: str, grant: Grant = Grant()) -> Sandbox:  # noqa: B008 - frozen, shared default
        return LocalSandbox(root, ports)

    return make


class Shared(msgspec.Struct, kw_only=True):
    """Parts a long-running daemon shares across sweeps (an in-process run makes its own)."""

    store: Store
    watcher: MarkerWatcher
    limiter: FairLimiter
    gate: Gate | None = None
    suites: anyio.CapacityLimiter | None = None  # concurrent server starts + suite runs, daemon-wide
    keep_jobs: list[bool] = msgspec.field(default_factory=lambda: [False])  # set on graceful daemon stop
    # Scenario ids an operator retried while the sweep runs (see `Daemon.retry_scenario`).
    requeue: MemoryObjectReceiveStream[int] | None = None


async def run_sweep(sweep: SweepFile, fingerprint: str, state_dir: Path, make_sandbox: SandboxFactory,
                    emit: EventSink, pack: Pack | None = None, shared: Shared | None = None) -> list[ConfigSummary]:
    src = sweep.scenarios
    params = pack.params if pack else ScenarioParams(turns=src.turns, sampler=src.sampler, naming=src.naming,
                                                    changes_per_turn=src.changes_per_turn, language=src.language)
    seeds = list(pack.manifest.seeds) if pack else seed_list(src.seeds)
    # Off the event loop: a large sweep takes minutes to generate, and the loop must keep serving meanwhile.
    scenarios = await anyio.to_thread.run_sync(
        lambda: {s: (pack.scenario(s) if pack else generate(s, params)) for s in seeds}, abandon_on_cancel=True)
    readme = render_readme(params.language)
    settings = EngineSettings(turn_timeout=sweep.run.turn_timeout, request_timeout=sweep.run.request_timeout,
                              server_start_timeout=sweep.run.server_start_timeout,
                              infra_retries=sweep.run.infra_retries)
    own = shared is None
    store = await Store.open(state_dir / "staminad.db") if shared is None else shared.store
    watcher = MarkerWatcher() if shared is None else shared.watcher
    try:
        resumed = await store.ensure_sweep(sweep.name, sweep.name, fingerprint,
                                           msgspec.json.encode(sweep).decode())
        await store.set_sweep_turns(sweep.name, params.turns)
        emit("sweep_started", {"sweep": sweep.name, "resumed": resumed, "scenarios": len(seeds),
                               "configurations": len(configurations(sweep))})
        limiter = FairLimiter(sweep.run.parallel) if shared is None else shared.limiter
        gate = None if shared is None else shared.gate
        suites = None if shared is None else shared.suites
        keep = [False] if shared is None else shared.keep_jobs
        async with anyio.create_task_group() as outer:
            if own:
                outer.start_soon(watcher.serve)
            gateway = await _start_gateway(sweep, store, make_sandbox, emit, outer)
            async with anyio.create_task_group() as jobs:
                live = _Live()
                spend = await store.llm_spend(sweep.name) if gateway is not None else {}
                prepared: dict[int, tuple[ScenarioSpec, Configuration, Path]] = {}

                def start(scenario_id: int, infra_grant: int) -> None:
                    spec, config, root = prepared[scenario_id]
                    live.count += 1
                    llm = None
                    if gateway is not None and sweep.llm is not None and adapter_for(config.agent).harness:
                        llm = ModelAccess(gateway, gateway.route(sweep.name, scenario_id, spend.get(scenario_id, 0.0)),
                                          sweep.llm.model)
                    jobs.start_soon(live.track, _one(spec, config, scenario_id, infra_grant, root, store, watcher,
                                                     settings, limiter, make_sandbox, emit, gate, keep, suites, llm))

                for config in configurations(sweep):
                    config_id = await store.ensure_configuration(sweep.name, config.name, config.agent,
                                                                 config.retries, config.feedback)
                    for seed in seeds:
                        row = await store.ensure_scenario(config_id, seed)
                        spec = ScenarioSpec(config_id=config_id, config_name=config.name, retries=config.retries,
                                            feedback=config.feedback, scenario=scenarios[seed],
                                            language=params.language, readme=readme)
                        root = state_dir / "sandboxes" / sweep.name / f"c{config_id}-s{seed}"
                        prepared[row.id] = (spec, config, root)
                        if row.status not in FINAL:
                            start(row.id, row.infra_grant)
                if shared is not None and shared.requeue is not None and live.count:
                    jobs.start_soon(_requeued, shared.requeue, live, store, prepared, start)
            outer.cancel_scope.cancel()
        await store.set_sweep_status(sweep.name, "finished")
        return await summarize(store, sweep.name)
    finally:
        if own:
            watcher.close()
        closer = getattr(make_sandbox, "aclose", None)
        if closer is not None and not keep[0]:
            with anyio.CancelScope(shield=True):
                await closer(state_dir / "sandboxes" / sweep.name)
        if own:
            with anyio.CancelScope(shield=True):
                await store.close()


class _Live:
    """Counts running scenario jobs; when the last ends, stops listening for requeued ones."""

    def __init__(self) -> None:
        self.count = 0
        self.listener = anyio.CancelScope()

    async def track(self, job: Awaitable[None]) -> None:
        try:
            await job
        finally:
            self.count -= 1
            if self.count == 0:
                self.listener.cancel()


async def _requeued(requeue: MemoryObjectReceiveStream[int], live: _Live, store: Store,
                    prepared: dict[int, tuple[ScenarioSpec, Configuration, Path]],
                    start: Callable[[int, int], None]) -> None:
    """Start scenarios retried while the sweep runs; one retried after the last job ended is left to the caller."""
    with live.listener:
        async for scenario_id in requeue:
            if scenario_id in prepared:
                spec, _, _ = prepared[scenario_id]
                row = await store.ensure_scenario(spec.config_id, spec.scenario.seed)
                if row.status not in FINAL and row.status != "running":
                    start(scenario_id, row.infra_grant)


async def _one(spec: ScenarioSpec, config: Configuration, scenario_id: int, infra_grant: int, root: Path,
               store: Store,
               watcher: MarkerWatcher, settings: EngineSettings, limiter: FairLimiter,
               make_sandbox: SandboxFactory, emit: EventSink, gate: Gate | None, keep: list[bool],
               suites: anyio.CapacityLimiter | None, llm: ModelAccess | None) -> None:
    async with limiter.slot(root.parent.name):
        adapter = adapter_for(config.agent)
        sandbox = make_sandbox(root, f"{config.name}/{spec.scenario.seed}",
                               Grant(layer=adapter.layer(), llm=llm is not None, image=adapter.image))
        await store.update_scenario(scenario_id, sandbox=getattr(sandbox, "describe", dict)())
        runner = ScenarioRunner(spec, store, sandbox, adapter, watcher, settings, emit, gate,
                                suites, llm)
        try:
            await runner.run(scenario_id, infra_grant)
        finally:
            if not keep[0]:  # a graceful daemon stop leaves detached harnesses running for the restart
                with anyio.CancelScope(shield=True):
                    await sandbox.close()


async def _start_gateway(sweep: SweepFile, store: Store, make_sandbox: SandboxFactory, emit: EventSink,
                         tg: anyio.abc.TaskGroup) -> Gateway | None:
    """Serve the sweep's LLM gateway if any configuration runs a real harness (None otherwise)."""
    llm = sweep.llm
    if llm is None or not any(adapter_for(c.agent).harness for c in configurations(sweep)):
        return None

    async def record(call: Call) -> None:
        await store.llm_call(call.scenario_id, call.attempt_id, call.turn, call.api, call.model,
                             (call.usage.input, call.usage.output, call.usage.cached), call.cost, call.status,
                             call.seconds, call.waited, call.streamed)

    limits = Limits(scenario_cost_cap=llm.scenario_cost_cap, sweep_cost_cap=llm.sweep_cost_cap,
                    outage_timeout=llm.outage_timeout, stream_idle_timeout=llm.stream_idle_timeout)
    gateway = Gateway(llm.endpoint, os.environ.get(llm.api_key_env, ""), dict(llm.pricing), limits, emit, record)
    hosts = getattr(make_sandbox, "llm_hosts", None)
    extra = await hosts() if hosts is not None else []
    await tg.start(gateway.serve, ["127.0.0.1", *extra], 0)
    serving = getattr(make_sandbox, "llm_serving", None)  # the runtime opens its sandboxes' way to this port only
    if serving is not None and gateway.port is not None:
        serving(gateway.port)
    return gateway


async def summarize(store: Store, sweep_id: str) -> list[ConfigSummary]:
    """Per configuration: turns passed over the scored scenarios (a scenario ended by a platform fault is not
    the agent's result and is left out; one whose harness ran out of infra retries counts, as in the paper)."""
    rows = await store.scenarios(sweep_id)
    infra = await store.infra_counts(sweep_id)
    usage = await store.llm_usage(sweep_id)
    last_kind = {p.scenario_id: p.infra_kind for p in await store.progress(sweep_id)}
    out = []
    for name in dict.fromkeys(n for n, _ in rows):
        mine = [r for n, r in rows if n == name]
        unscored = [r for r in mine if r.status == "infra_failed" and is_platform(last_kind.get(r.id))]
        counted = [r for r in mine if r not in unscored]
        cost, tokens = usage.get(name, (0.0, 0))
        turns = [r.turns_passed for r in counted]
        statuses: dict[str, int] = {}
        for r in mine:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        se = statistics.stdev(turns) / math.sqrt(len(turns)) if len(turns) > 1 else 0.0
        out.append(ConfigSummary(
            name=name, scenarios=len(mine), finished=sum(r.status in FINAL for r in mine),
            mean_turns=statistics.fmean(turns) if turns else 0.0, se_turns=se,
            pass_rate=sum(r.status == "done" for r in counted) / len(counted) if counted else 0.0,
            statuses=statuses, infra={k: v for (n, k), v in infra.items() if n == name}, cost=cost, tokens=tokens,
            unscored=len(unscored)))
    return out


def format_summary(summaries: list[ConfigSummary]) -> str:
    width = max([len(s.name) for s in summaries] + [13])
    metered = any(s.tokens for s in summaries)
    lines = [f"{'configuration':<{width}}  turns passed   pass rate  scenarios (status)            infra failures"
             + ("   tokens      cost" if metered else "")]
    for s in summaries:
        status = ", ".join(f"{k} {v}" for k, v in sorted(s.statuses.items()))
        if s.unscored:
            status += f"; {s.unscored} unscored"
        infra = ", ".join(f"{k} {v}" for k, v in sorted(s.infra.items())) or "-"
        line = (f"{s.name:<{width}}  {s.mean_turns:5.1f} +- {s.se_turns:4.1f}  {s.pass_rate:8.0%}  "
                f"{s.scenarios:3} ({status}){'':<{max(0, 26 - len(status))}}  {infra}")
        if metered:
            line += f"{'':<{max(0, 16 - len(infra))}} {s.tokens:>9,} {s.cost:>8.2f} $"
        lines.append(line)
    return "\n".join(lines)


__all__ = ["ConfigSummary", "Shared", "format_summary", "local_factory", "run_sweep", "summarize"]
