"""Read-side answers of the control socket: the store's rows turned into protocol replies.

Kept apart from `service` so the daemon's life cycle and its queries can each be read on their own;
where a scenario stands is `engine.standing`'s, one definition for every view.
"""

from __future__ import annotations

import json
import sqlite3
import time
from itertools import groupby
from pathlib import Path
from typing import Any

import anyio

from protocol import AttemptTexts, CodeChange, ScenarioInfo, SweepInfo
from protocol.messages import AttemptSummary, FailedTest, ScenarioList
from protocol.replies import ManualWait
from protocol.usage import hint
from staminad.agents.transcripts import read_transcript
from staminad.analysis import codediff
from staminad.analysis.codediff import AttemptRef
from staminad.engine.config import SweepError
from staminad.engine.standing import scenario_row, turn_timeout
from staminad.engine.summary import summarize_in
from staminad.sandbox.base import marker_path
from staminad.sandbox.bounded import bounded_tail
from staminad.sandbox.codekeep import job_id
from state import sweeps
from state.money import CallMoney
from state.scenarios import StoredScenario
from state.store import AttemptRow, Store

LOG_TAIL = 4000  # bytes of a harness log a reply carries (the engine bounds the stored server logs)


async def _sweep_row(store: Store, sweep_id: str) -> sweeps.StoredSweep:
    """The sweep's row; SweepError naming it when there is none."""
    found = await sweeps.find_sweep(store, sweep_id)
    if found is None:
        raise SweepError(f"no sweep {sweep_id}")
    return found


_WAITING = """
    SELECT c.name, s.seed, s.sandbox, a.turn, a.attempt, a.infra_try FROM configurations c
    JOIN scenarios s ON s.config_id = c.id JOIN attempts a ON a.scenario_id = s.id
    WHERE c.sweep_id = ? AND c.agent = 'manual' AND a.phase = 'launched'
      AND a.id = (SELECT MAX(b.id) FROM attempts b WHERE b.scenario_id = s.id)
    ORDER BY c.id, s.seed
"""


def _manual_waits(conn: sqlite3.Connection, sweep_id: str) -> tuple[ManualWait, ...]:
    """The sweep's manual scenarios whose prompt is handed over and unanswered: what `status` tells the person
    (the same three things the engine's `ManualPrompt` event says, so `logs` is not the only place to learn them)."""
    out = []
    for name, seed, sandbox, turn, attempt, infra_try in conn.execute(_WAITING, (sweep_id,)):
        try:
            root = _root(json.loads(sandbox or "{}"))
        except ValueError:  # a corrupt sandbox column: no path to show
            root = None
        if root is None:
            continue
        job = job_id(turn, attempt, infra_try)
        prompt = root / "control" / "prompts" / f"{job}.md"
        if not (root / "control" / "jobs" / job).is_dir():  # not handed over yet (the engine makes it at hand-over)
            continue
        done = f"{hint('done')} --marker {marker_path(root / 'control', job)}"
        out.append(
            ManualWait(configuration=name, seed=seed, prompt=str(prompt), workspace=str(root / "workspace"), done=done)
        )
    return tuple(out)


def _sweep_infos(conn: sqlite3.Connection, sweep_id: str | None, now: float) -> list[SweepInfo]:
    return [
        SweepInfo(
            sweep=row.id,
            status=row.status,
            fingerprint=row.fingerprint,
            configurations=tuple(summarize_in(conn, row.id)),
            created_at=row.created_at,
            paused_seconds=row.paused_total(now),
            reason=row.reason,
            waiting=_manual_waits(conn, row.id),
        )
        for row in sweeps.read_sweeps(conn, sweep_id)
    ]


async def sweep_infos(store: Store, now: float | None = None) -> list[SweepInfo]:
    """Every sweep's figures, oldest first, read in one hop off the event loop (`Store.read`): a `status` under
    load waits on neither the loop nor the writes queued on the store's connection."""
    return await store.read(_sweep_infos, None, time.time() if now is None else now)


async def sweep_info(store: Store, sweep_id: str, now: float | None = None) -> SweepInfo:
    """The sweep's figures (one hop, as `sweep_infos`); its time paused is counted up to `now` (default: the
    clock). SweepError naming it when there is none."""
    found = await store.read(_sweep_infos, sweep_id, time.time() if now is None else now)
    if not found:
        raise SweepError(f"no sweep {sweep_id}")
    return found[0]


async def find_scenario(store: Store, sweep_id: str, configuration: str, seed: int) -> StoredScenario:
    match = [r for name, r in await store.scenarios(sweep_id) if name == configuration and r.seed == seed]
    if not match:
        raise SweepError(f"no scenario with seed {seed} in configuration {configuration!r} of sweep {sweep_id}")
    return match[0]


def _root(sandbox: dict[str, Any]) -> Path | None:
    """The scenario's sandbox directory on this host (workspace/ and control/ are under it)."""
    root = sandbox.get("root")
    return Path(root) if isinstance(root, str) and root else None


def _tail(path: Path) -> str:
    tail = bounded_tail(path, LOG_TAIL)
    return "" if tail is None else tail.text


def _money(m: CallMoney) -> dict[str, Any]:
    """An attempt's model calls as its summary carries them."""
    return {
        "tokens": m.tokens,
        "cost": m.cost,
        "calls": m.calls,
        "estimated_calls": m.estimated,
        "unpriced_calls": m.unpriced,
        "compactions": m.compactions,
    }


async def scenario_info(store: Store, sweep_id: str, configuration: str, seed: int) -> ScenarioInfo:
    row = await find_scenario(store, sweep_id, configuration, seed)
    usage = await sweeps.attempt_usage(store, row.id)
    stored = [f for f in AttemptSummary.__struct_fields__ if f in AttemptRow.__struct_fields__]
    attempts = tuple(
        AttemptSummary(**{f: getattr(a, f) for f in stored}, **_money(usage.get(a.id, CallMoney())))
        for a in await store.attempts(row.id)
    )
    root = _root(row.sandbox)
    agent = await sweeps.configuration_agent(store, row.config_id)
    transcript = (
        None if root is None else await anyio.to_thread.run_sync(read_transcript, root / "workspace" / ".home", agent)
    )
    return ScenarioInfo(
        sweep=sweep_id,
        configuration=configuration,
        seed=seed,
        status=row.status,
        turns_passed=row.turns_passed,
        reason=row.reason,
        attempts=attempts,
        workspace=str(root / "workspace") if root else "",
        transcript=transcript.items if transcript else (),
        transcript_path=transcript.path if transcript else "",
    )


async def attempt_texts(store: Store, attempt_id: int) -> AttemptTexts:
    row = await sweeps.attempt_prompt(store, attempt_id)
    if row is None:
        raise SweepError(f"no attempt {attempt_id}")
    results = await store.attempt_results(attempt_id) or []
    failures = tuple(
        FailedTest(
            name=r["name"],
            category=r["category"],
            rule=r["rule"],
            message=r.get("message", ""),
            request=r.get("request", ""),
            status=r.get("status"),
            response=r.get("response", ""),
        )
        for r in results
        if not r.get("passed")
    )
    root = _root(row.sandbox)
    job = f"t{row.turn:04d}-a{row.attempt:02d}-i{row.infra_try:02d}"  # the engine's job directory, with its log
    log = "" if root is None else await anyio.to_thread.run_sync(_tail, root / "control" / "jobs" / job / "log")
    return AttemptTexts(
        id=attempt_id,
        prompt_kind=row.prompt_kind,
        prompt=row.prompt,
        feedback=row.feedback,
        failures=failures,
        harness_log=log,
        server_log=row.server_log,
    )


async def code_change(store: Store, attempt_id: int) -> CodeChange:
    """The agent's code change up to an attempt: its kept workspace against the one kept before it."""
    found = await sweeps.attempt_scenario(store, attempt_id)
    if found is None:
        raise SweepError(f"no attempt {attempt_id}")
    scenario_id, sandbox = found
    refs = [
        AttemptRef(a.id, a.turn, a.attempt, a.infra_try, a.phase, a.outcome) for a in await store.attempts(scenario_id)
    ]
    return await anyio.to_thread.run_sync(codediff.code_change, _root(sandbox), refs, attempt_id)


async def scenario_list(store: Store, sweep_id: str, seq: int = 0) -> ScenarioList:
    """Every scenario row of the sweep; `seq` is the last event published before the rows were read."""
    found = await _sweep_row(store, sweep_id)  # raises for an unknown sweep, without computing its figures
    timeout = turn_timeout(found.config, sweep_id)
    scenarios = await store.scenarios(sweep_id)
    progress = {sid: list(rows) for sid, rows in groupby(await store.progress(sweep_id), key=lambda p: p.scenario_id)}
    waits = await sweeps.outage_waits(store, sweep_id)
    return ScenarioList(
        sweep=sweep_id,
        seq=seq,
        retries=await store.configuration_retries(sweep_id),
        scenarios=tuple(scenario_row(name, s, progress.get(s.id, []), timeout, waits) for name, s in scenarios),
        turn_timeout=timeout,
    )


__all__ = ["attempt_texts", "find_scenario", "scenario_info", "scenario_list", "sweep_info", "sweep_infos"]
