"""Laying a sweep out: every configuration x seed recorded and its scenario job started, lazily.

A scenario is recorded and generated only once fewer than `window` jobs are live, so a sweep of
100,000 scenarios holds `window` of them in memory; scenarios an operator retries while the sweep
runs are started again here too.
"""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from protocol.events import FINAL
from staminad.agents.base import adapter_for
from staminad.engine.access import ModelAccess, upstream_of
from staminad.engine.config import Configuration, SweepFile, configurations
from staminad.engine.jobs import Job, Parts, Plan, run_job
from staminad.engine.models import sweep_models
from staminad.engine.spec import ScenarioSpec
from staminad.gateway.proxy import Gateway
from state.store import Store


class Starter:
    """Starts scenario jobs in the sweep's task group, each with its model route when it runs a real harness."""

    def __init__(
        self,
        sweep: SweepFile,
        parts: Parts,
        gateway: Gateway | None,
        jobs: anyio.abc.TaskGroup,
        spend: dict[int, float],
    ) -> None:
        self.sweep, self.parts, self.gateway, self.jobs, self.spend = sweep, parts, gateway, jobs, spend
        self.live = Live()
        # Per recorded scenario: its configuration id, configuration, seed and sandbox root (a few hundred
        # bytes); the scenario itself (as bytes, ~60 KB at 100 turns: `engine.turns`) is generated only when its
        # job starts, and dropped when it ends.
        self.prepared: dict[int, tuple[int, Configuration, int, Path]] = {}
        self.plan: Plan | None = None
        self.models = {m.name: m for m in sweep_models(sweep.llm)}
        # One scenario generated at a time: in threads, generation holds the GIL, and more of them at once would
        # only queue the event loop behind them; in a worker, it leaves that worker's other slots to suites.
        self.generating = anyio.CapacityLimiter(1)

    async def start(self, scenario_id: int, infra_grant: int) -> None:
        config_id, config, seed, root = self.prepared[scenario_id]
        assert self.plan is not None
        plan = self.plan
        # Off the event loop: generating a scenario of many turns takes a while.
        async with self.generating:
            scenario = await plan.held(seed)
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
        job = Job(scenario_id=scenario_id, spec=spec, config=config, root=root, infra_grant=infra_grant, llm=llm)
        self.jobs.start_soon(self.live.track, run_job(self.parts, job))


def window(parallel: int) -> int:
    """Scenario jobs a sweep holds at once (running or awaiting a slot): what bounds its memory while it expands."""
    return max(2 * parallel, 8)


async def prepare(sweep: SweepFile, state_dir: Path, plan: Plan, store: Store, starter: Starter) -> None:
    """Record every configuration x seed and start the scenarios not yet finished, lazily: a scenario is recorded
    and generated only once fewer than `window` jobs are live, so a sweep of 100,000 holds `window` scenarios in
    memory, not 100,000; `Shared.expanding` says how far it got meanwhile."""
    configs = configurations(sweep)
    total, done = len(configs) * len(plan.seeds), 0
    expanding = starter.parts.shared.expanding
    starter.plan = plan
    limit = window(sweep.run.parallel)
    try:
        ids = []  # every configuration first: each view lists it (its scenarios never run) before any is recorded
        for config in configs:
            ids.append(
                await store.ensure_configuration(
                    sweep.name, config.name, config.agent, config.retries, config.feedback, config.model
                )
            )
        for config, config_id in zip(configs, ids, strict=True):
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


class Live:
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


async def requeued(requeue: MemoryObjectReceiveStream[int], starter: Starter, store: Store) -> None:
    """Start scenarios retried while the sweep runs; one retried after the last job ended is left to the caller."""
    with starter.live.listener:
        async for scenario_id in requeue:
            if scenario_id in starter.prepared:
                config_id, _, seed, _ = starter.prepared[scenario_id]
                row = await store.ensure_scenario(config_id, seed)
                if row.status not in FINAL and row.status != "running":
                    await starter.start(scenario_id, row.infra_grant)


__all__ = ["Live", "Starter", "prepare", "requeued", "window"]
