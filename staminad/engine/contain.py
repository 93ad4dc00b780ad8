"""A bug of ours inside one scenario ends that scenario alone, visibly and re-runnably, never the sweep.

The sweep runs its scenarios in one task group, where an exception escaping one task cancels all the
others: a neighbour stopped mid-turn, the sweep ended `error`. So any `Exception` out of a scenario's
run (cancellation is a BaseException and passes) is caught at the job's edge (`engine.jobs`) and
handed here: logged with its traceback, recorded as an `internal_error` (a platform kind: never
scored against the agent), and the scenario ends `infra_failed`. Its attempt rows are left as they
were, so `staminad retry` takes it up from its last recorded step, as a restarted daemon would,
and nothing the agent already did is run again. Whatever fails while recording is logged too, and
still ends nothing else.
"""

from __future__ import annotations

import logging

import anyio

from protocol.errors import leaves
from protocol.events import InfraFailure, ScenarioFinished
from protocol.kinds import InfraKind
from protocol.usage import hint
from staminad.engine.spec import EventSink
from state.store import Store

log = logging.getLogger(__name__)

KIND: InfraKind = "internal_error"
RECORD_TIMEOUT = 30.0  # bound on writing the end down (shielded: a cancel of the sweep does not skip it)
DETAIL = 300  # characters of the exception kept with the scenario


async def end_scenario(
    store: Store, emit: EventSink, scenario_id: int, configuration: str, seed: int, exc: Exception
) -> None:
    """Log `exc` with its traceback and end the scenario `infra_failed` with an `internal_error` (see module)."""
    who = f"scenario {configuration}/{seed} (id {scenario_id})"
    log.error("internal error in %s: it ends as infra_failed; `%s` runs it again", who, hint("retry"), exc_info=exc)
    first = leaves(exc)[0]  # raised through a task group: say what was raised, not "unhandled errors"
    detail = f"{type(first).__name__}: {first}"
    detail = detail if len(detail) <= DETAIL else detail[:DETAIL] + "..."
    try:
        with anyio.CancelScope(shield=True), anyio.fail_after(RECORD_TIMEOUT):
            rows = await store.latest_turn_attempts(scenario_id)
            last = rows[-1] if rows else None
            turn, attempt, infra_try = (last.turn, last.attempt, last.infra_try) if last else (0, 1, 0)
            await store.infra_event(scenario_id, turn, attempt, KIND, detail)
            passed = await store.turns_passed(scenario_id)
            reason = (
                f"{KIND} on turn {turn}: {detail} (the benchmark failed here, not the agent: not scored; "
                f"`{hint('retry')}` runs it again from its last step)"
            )
            await store.set_scenario_status(scenario_id, "infra_failed", turns_passed=passed, reason=reason)
        emit(
            InfraFailure(
                scenario=scenario_id,
                configuration=configuration,
                seed=seed,
                turn=turn,
                attempt=attempt,
                infra_try=infra_try,
                infra_kind=KIND,
                detail=detail,
            )
        )
        emit(
            ScenarioFinished(
                scenario=scenario_id,
                configuration=configuration,
                seed=seed,
                status="infra_failed",
                turns_passed=passed,
                reason=reason,
            )
        )
    except Exception:
        log.exception("could not record the internal error of %s", who)


__all__ = ["KIND", "end_scenario"]
