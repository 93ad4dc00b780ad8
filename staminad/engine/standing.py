"""Where a scenario stands, from its stored attempt rows: the one definition the daemon's `status`, the TUI and the
viewer all show (pure, so it is tested in one place)."""

from __future__ import annotations

import functools
import logging
from itertools import groupby
from typing import Annotated

import msgspec

from protocol.events import FINAL, Step, phase, watchdog_deadline
from protocol.messages import HISTORY_END, ScenarioRow
from state.scenarios import StoredScenario
from state.store import Progress

log = logging.getLogger(__name__)


class _Run(msgspec.Struct, frozen=True):
    turn_timeout: Annotated[float, msgspec.Meta(ge=0)] = 0.0


class _Submitted(msgspec.Struct, frozen=True):
    """The part of a stored sweep file (the JSON it was submitted as) that a scenario's standing reads."""

    run: _Run = _Run()


_SUBMITTED = msgspec.json.Decoder(_Submitted)


@functools.lru_cache(maxsize=256)  # a view lists a sweep's scenarios often: decoded, and warned about, once
def turn_timeout(config: str, sweep: str = "") -> float:
    """The sweep's turn watchdog in seconds, from the sweep file it was submitted with (its stored JSON).

    A file that does not say (a store written by an older version) gives 0: the scenarios are listed without
    deadlines. So does a file that cannot be read as a sweep file (not JSON, or a turn timeout that is not a
    number of seconds), but that is logged as a warning naming the sweep and what is wrong, never passed over.
    """
    try:
        return _SUBMITTED.decode(config).run.turn_timeout
    except msgspec.DecodeError as e:
        log.warning(
            "sweep %s: its stored sweep file is unreadable (%s); scenarios are listed without deadlines", sweep, e
        )
        return 0.0


def _step(last: Progress | None) -> Step | None:
    return (
        None
        if last is None
        else Step(attempt=last.attempt, infra_try=last.infra_try, phase=last.phase, outcome=last.outcome)
    )


def scenario_row(
    configuration: str,
    scenario: StoredScenario,
    attempts: list[Progress],
    turn_timeout: float = 0.0,
    waits: dict[tuple[int, int, int, int], float] | None = None,
) -> ScenarioRow:
    """Where one scenario stands, from its attempts in order (the engine's phases, named for people).

    `waits` holds the outage time recorded for running attempts (see `state.sweeps.outage_waits`): the
    watchdog's deadline moves by it, as the engine's does.
    """
    history: list[str] = []
    for _, rows in groupby(attempts, key=lambda p: p.turn):
        passing = [p for p in rows if p.outcome == "pass"]
        if passing:
            history.append("P" if passing[0].attempt == 1 else "R")
    history.append(HISTORY_END.get(scenario.status, ""))
    last = attempts[-1] if attempts else None
    running = last is not None and last.phase == "launched" and scenario.status not in FINAL
    # A failure is the last one only while nothing passed after it: a scenario that recovered (a retry passed, or
    # every turn did) has none to show, so no view reads "done (business_logic)" for a scenario that passed.
    after_pass = next((i + 1 for i in range(len(attempts) - 1, -1, -1) if attempts[i].outcome == "pass"), 0)
    failures = [p for p in attempts[after_pass:] if p.outcome in ("fail", "infra")]
    last_failure = ""
    if failures:
        f = failures[-1]
        last_failure = (f.infra_kind or "infra") if f.outcome == "infra" else (",".join(f.categories) or "fail")
    return ScenarioRow(
        id=scenario.id,
        configuration=configuration,
        seed=scenario.seed,
        status=scenario.status,
        turns_passed=scenario.turns_passed,
        turn=last.turn if last else 0,
        attempt=last.attempt if last else 1,
        infra_try=last.infra_try if last else 0,
        phase=phase(scenario.status, _step(last)),
        last_failure=last_failure,
        history="".join(history),
        reason=scenario.reason,
        since=_since(last),
        deadline=_deadline(last, turn_timeout, waits or {}) if last and running and turn_timeout else 0.0,
        engine=str((scenario.sandbox or {}).get("engine") or ""),
    )


def _deadline(last: Progress, turn_timeout: float, waits: dict[tuple[int, int, int, int], float]) -> float:
    waited = waits.get((last.scenario_id, last.turn, last.attempt, last.infra_try), 0.0)
    return watchdog_deadline(last.launched_at, turn_timeout, waited, last.resumed_at)


def _since(last: Progress | None) -> float:
    """When the scenario's current phase began, as far as its attempt rows say."""
    if last is None:
        return 0.0
    return last.finished_at or last.launched_at if last.phase == "tested" else last.launched_at


__all__ = ["scenario_row", "turn_timeout"]
