"""Runs a sweep in process: every configuration x scenario, `parallel` at a time, recorded in the store.

A sweep that is run again with the same name and configuration resumes: finished scenarios are
skipped and unfinished ones continue from their last recorded step. Laying the sweep out is
`engine.expand`'s, each scenario job `engine.jobs`'s, the summary `engine.summary`'s.
"""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import msgspec

from protocol.events import FINAL, SweepStarted
from staminad.bench.pack import Pack
from staminad.bench.readme import render_readme
from staminad.bench.scenario import ScenarioParams
from staminad.bench.seeds import seed_list
from staminad.engine.access import start_gateway
from staminad.engine.config import SweepFile, configurations
from staminad.engine.expand import Starter, prepare, requeued
from staminad.engine.fair import FairLimiter
from staminad.engine.jobs import Parts, Plan, Shared
from staminad.engine.markers import MarkerWatcher
from staminad.engine.spec import EngineSettings, EventSink
from staminad.engine.summary import ConfigSummary, summarize
from staminad.sandbox.base import SandboxFactory
from staminad.suite.pool import WorkerPool
from state.store import Store

log = logging.getLogger(__name__)


async def run_sweep(
    sweep: SweepFile,
    fingerprint: str,
    state_dir: Path,
    make_sandbox: SandboxFactory,
    emit: EventSink,
    pack: Pack | None = None,
    shared: Shared | None = None,
    detach: anyio.Event | None = None,
    workers: WorkerPool | None = None,
) -> list[ConfigSummary]:
    """Run (or resume) the sweep: on the daemon's `shared` parts, or on its own store and watcher; `detach` (its
    own only) set before it is cancelled leaves its harnesses and sandboxes running for a resume; `workers` (its
    own only, serving) makes and runs its suites in worker processes, as the daemon's do (None: threads)."""
    plan = await _plan(sweep, pack)
    if shared is not None:
        return await _run(sweep, fingerprint, state_dir, plan, Parts(shared, make_sandbox, emit, plan.settings))
    store = await Store.open(state_dir / "staminad.db")
    watcher = MarkerWatcher()
    try:
        own = Shared(
            store=store,
            watcher=watcher,
            limiter=FairLimiter(sweep.run.parallel),
            detach=detach or anyio.Event(),
            workers=workers,
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(watcher.serve)
            result = await _run(sweep, fingerprint, state_dir, plan, Parts(own, make_sandbox, emit, plan.settings))
            tg.cancel_scope.cancel()
        return result
    finally:
        watcher.close()
        with anyio.CancelScope(shield=True):
            await store.close()


async def _plan(sweep: SweepFile, pack: Pack | None) -> Plan:
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
        outage_budget=sweep.run.outage_budget,
    )
    return Plan(params=params, seeds=seeds, pack=pack, readme=render_readme(params.language), settings=settings)


async def _run(sweep: SweepFile, fingerprint: str, state_dir: Path, plan: Plan, parts: Parts) -> list[ConfigSummary]:
    """Record the sweep, start every unfinished scenario (and any an operator retries meanwhile), summarise."""
    store = parts.shared.store
    try:
        await store.ensure_sweep(sweep.name, sweep.name, fingerprint, msgspec.json.encode(sweep).decode())
        # Every view counts the scenarios not yet recorded (laid out lazily) as never run: it needs their number.
        await store.set_sweep_turns(sweep.name, plan.params.turns, len(plan.seeds))
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
            gateway = await start_gateway(sweep, store, parts.make_sandbox, parts.emit, outer)
            async with anyio.create_task_group() as jobs:
                starter = Starter(sweep, parts, gateway, jobs, await store.llm_spend(sweep.name) if gateway else {})
                await prepare(sweep, state_dir, plan, store, starter)
                requeue = parts.shared.requeue
                if requeue is not None and starter.live.count:
                    jobs.start_soon(requeued, requeue, starter, store)
            outer.cancel_scope.cancel()
        await store.set_sweep_status(sweep.name, "finished")
        return await summarize(store, sweep.name)
    finally:
        if not parts.shared.detach.is_set():
            with anyio.CancelScope(shield=True):
                try:
                    await parts.make_sandbox.aclose(state_dir / "sandboxes" / sweep.name)
                except Exception as exc:  # noqa: BLE001 - an engine that does not answer must not fail a finished sweep
                    # What is left there is an orphan now: the next daemon start, or `staminad sandboxes --prune`,
                    # removes it (`staminad.sandbox.docker.orphans`).
                    log.warning(
                        "sweep %s: its sandboxes were not removed (%s: %s)", sweep.name, type(exc).__name__, exc
                    )


__all__ = ["run_sweep"]
