"""Read-side answers of the control socket: the store's rows turned into protocol replies.

Kept apart from `service` so the daemon's life cycle and its queries can each be read on their own;
`scenario_rows` is pure, so where a scenario stands is defined (and tested) in one place.
"""

from __future__ import annotations

from itertools import groupby

from protocol import AttemptTexts, ScenarioInfo, SweepInfo
from protocol.events import Step, phase
from protocol.messages import HISTORY_END, AttemptSummary, FailedTest, ScenarioList, ScenarioRow
from staminad.engine.config import SweepError
from staminad.engine.sweep import summarize
from state import sweeps
from state.store import Progress, Store, StoredScenario


async def _sweep_row(store: Store, sweep_id: str) -> tuple[str, str]:
    """(status, fingerprint) of the sweep; SweepError naming it when there is none."""
    found = await sweeps.find_sweep(store, sweep_id)
    if found is None:
        raise SweepError(f"no sweep {sweep_id}")
    return found.status, found.fingerprint


async def sweep_info(store: Store, sweep_id: str) -> SweepInfo:
    row = await _sweep_row(store, sweep_id)
    configs = tuple(await summarize(store, sweep_id))
    return SweepInfo(sweep=sweep_id, status=row[0], fingerprint=row[1], configurations=configs)


async def find_scenario(store: Store, sweep_id: str, configuration: str, seed: int) -> StoredScenario:
    match = [r for name, r in await store.scenarios(sweep_id) if name == configuration and r.seed == seed]
    if not match:
        raise SweepError(f"no scenario with seed {seed} in configuration {configuration!r} of sweep {sweep_id}")
    return match[0]


async def scenario_info(store: Store, sweep_id: str, configuration: str, seed: int) -> ScenarioInfo:
    row = await find_scenario(store, sweep_id, configuration, seed)
    attempts = tuple(AttemptSummary(**{f: getattr(a, f) for f in AttemptSummary.__struct_fields__})
                     for a in await store.attempts(row.id))
    return ScenarioInfo(sweep=sweep_id, configuration=configuration, seed=seed, status=row.status,
                        turns_passed=row.turns_passed, reason=row.reason, attempts=attempts)


async def attempt_texts(store: Store, attempt_id: int) -> AttemptTexts:
    row = await sweeps.attempt_prompt(store, attempt_id)
    if row is None:
        raise SweepError(f"no attempt {attempt_id}")
    results = await store.attempt_results(attempt_id) or []
    failures = tuple(FailedTest(name=r["name"], category=r["category"], rule=r["rule"],
                                message=r.get("message", ""), request=r.get("request", ""),
                                status=r.get("status"), response=r.get("response", ""))
                     for r in results if not r.get("passed"))
    return AttemptTexts(id=attempt_id, prompt_kind=row.prompt_kind, prompt=row.prompt, feedback=row.feedback,
                        failures=failures)


async def scenario_list(store: Store, sweep_id: str, seq: int = 0) -> ScenarioList:
    """Every scenario row of the sweep; `seq` is the last event published before the rows were read."""
    await _sweep_row(store, sweep_id)  # raises for an unknown sweep, without computing its figures
    scenarios = await store.scenarios(sweep_id)
    progress = {sid: list(rows) for sid, rows in groupby(await store.progress(sweep_id), key=lambda p: p.scenario_id)}
    return ScenarioList(sweep=sweep_id, seq=seq, retries=await store.configuration_retries(sweep_id),
                        scenarios=tuple(scenario_row(name, s, progress.get(s.id, [])) for name, s in scenarios))


def _step(last: Progress | None) -> Step | None:
    return None if last is None else Step(attempt=last.attempt, infra_try=last.infra_try, phase=last.phase,
                                          outcome=last.outcome)


def scenario_row(configuration: str, scenario: StoredScenario, attempts: list[Progress]) -> ScenarioRow:
    """Where one scenario stands, from its attempts in order (the engine's phases, named for people)."""
    history: list[str] = []
    for _, rows in groupby(attempts, key=lambda p: p.turn):
        passing = [p for p in rows if p.outcome == "pass"]
        if passing:
            history.append("P" if passing[0].attempt == 1 else "R")
    history.append(HISTORY_END.get(scenario.status, ""))
    last = attempts[-1] if attempts else None
    failures = [p for p in attempts if p.outcome in ("fail", "infra")]
    last_failure = ""
    if failures:
        f = failures[-1]
        last_failure = (f.infra_kind or "infra") if f.outcome == "infra" else (f.categories or "fail")
    return ScenarioRow(id=scenario.id, configuration=configuration, seed=scenario.seed, status=scenario.status,
                       turns_passed=scenario.turns_passed, turn=last.turn if last else 0,
                       attempt=last.attempt if last else 1, infra_try=last.infra_try if last else 0,
                       phase=phase(scenario.status, _step(last)), last_failure=last_failure, history="".join(history),
                       reason=scenario.reason)


__all__ = ["attempt_texts", "find_scenario", "scenario_info", "scenario_list", "scenario_row", "sweep_info"]
