"""A scenario's phase is one function: a monitor folding live events and a snapshot of the store agree."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

import msgspec
import pytest

from protocol import Event, decoder
from protocol.events import (
    AttemptStarted,
    AttemptTested,
    EventData,
    HarnessDone,
    InfraFailure,
    LlmWait,
    ScenarioFinished,
    SuiteStarted,
    phase,
)
from staminad.daemon.views import scenario_list
from state.store import HarnessEnd, Store, Verdict
from tui.board import Board

pytestmark = pytest.mark.anyio


class Who(TypedDict):
    """Which scenario an event is about, beside its number."""

    configuration: str
    seed: int


WHO: Who = {"configuration": "c", "seed": 0}  # the store numbers the only scenario 1


def _tested(turn: int, attempt: int, passed: bool) -> AttemptTested:
    return AttemptTested(
        scenario=1,
        **WHO,
        turn=turn,
        attempt=attempt,
        passed=passed,
        failed_tests=0 if passed else 2,
        tests=9,
        categories=() if passed else ("validation",),
        suite_seconds=0.1,
        server_seconds=0.1,
    )


async def test_live_folding_and_snapshots_give_the_same_phase_after_every_event(tmp_path: Path) -> None:
    """After each event (and the store write the engine makes with it) the board's row and a fresh snapshot agree."""
    async with await Store.open(tmp_path / "s.db") as store:
        await store.ensure_sweep("w", "w", "fp", "{}")
        config = await store.ensure_configuration("w", "c", "reference", 2, "detailed")
        sid = (await store.ensure_scenario(config, 0)).id
        assert sid == 1
        live = Board()
        live.set_scenarios(await scenario_list(store, "w"))
        attempt_id = 0
        seen: list[str] = []

        async def step(data: EventData, seq: int) -> None:
            nonlocal attempt_id
            match data:  # what the engine writes to the store as it publishes each event
                case AttemptStarted():
                    await store.set_scenario_status(sid, "running")
                    attempt_id = (
                        await store.begin_attempt(sid, data.turn, data.attempt, data.infra_try, "turn", "p")
                    ).id
                case HarnessDone():
                    await store.harness_done(attempt_id, HarnessEnd(harness_seconds=1.0))
                case InfraFailure():
                    await store.tested(attempt_id, Verdict(outcome="infra", infra_kind=data.infra_kind))
                case AttemptTested():
                    await store.tested(attempt_id, Verdict(outcome="pass" if data.passed else "fail"))
                case ScenarioFinished():
                    await store.set_scenario_status(sid, data.status, turns_passed=data.turns_passed)
                case _:
                    pass
            live.apply(Event(sweep="w", data=data, at=float(seq), seq=seq))
            snapshot = Board()
            snapshot.set_scenarios(await scenario_list(store, "w"))
            folded, read = live.find("w", sid), snapshot.find("w", sid)
            assert folded is not None and read is not None
            assert folded.phase == read.phase, (type(data).__name__, folded.phase, read.phase)
            assert (folded.status, folded.turn, folded.attempt) == (read.status, read.turn, read.attempt)
            seen.append(folded.phase)

        run: list[EventData] = [
            AttemptStarted(scenario=1, **WHO, turn=0, attempt=1, infra_try=0),
            HarnessDone(scenario=1, **WHO, turn=0, attempt=1, exit=0, signal=None, harness_seconds=1.0),
            SuiteStarted(scenario=1, **WHO, turn=0, attempt=1, server_seconds=0.2),
            _tested(0, 1, passed=False),
            AttemptStarted(scenario=1, **WHO, turn=0, attempt=2, infra_try=0),
            LlmWait(scenario=1, turn=0, reason="upstream answered 429", wait_seconds=1.0, waited=0.0),
            InfraFailure(scenario=1, **WHO, turn=0, attempt=2, infra_try=0, infra_kind="stuck", detail="hang"),
            AttemptStarted(scenario=1, **WHO, turn=0, attempt=2, infra_try=1),
            HarnessDone(scenario=1, **WHO, turn=0, attempt=2, exit=0, signal=None, harness_seconds=1.0),
            _tested(0, 2, passed=True),
            AttemptStarted(scenario=1, **WHO, turn=1, attempt=1, infra_try=0),
            HarnessDone(scenario=1, **WHO, turn=1, attempt=1, exit=0, signal=None, harness_seconds=1.0),
            _tested(1, 1, passed=False),
            ScenarioFinished(scenario=1, **WHO, status="failed", turns_passed=1, reason="turn 1 failed"),
        ]
        for seq, data in enumerate(run, start=1):
            await step(data, seq)
        # Every phase the function knows short of `pending` was shown, so the comparison covered each.
        assert set(seen) == {
            "agent working",
            "testing",
            "feedback",
            "retrying",
            "infra wait",
            "infra retry",
            "passed",
            "failed",
        }


def test_phase_of_a_scenario_without_attempts_is_pending_and_a_final_status_wins() -> None:
    """No attempt yet: pending; an ended scenario shows its status whatever its last step was."""
    assert phase("pending", None) == "pending"
    assert phase("capped", None) == "capped"


def test_every_event_kind_survives_the_wire() -> None:
    """An event encodes and decodes to an equal Struct of its own kind (the tag picks it)."""
    for data in (
        _tested(0, 1, passed=True),
        InfraFailure(scenario=1, **WHO, turn=0, attempt=1, infra_try=0, infra_kind="stuck", detail="x"),
    ):
        event = Event(sweep="w", data=data, at=1.0, seq=1)
        back = decoder(Event).decode(msgspec.msgpack.encode(event))
        assert back == event and back.kind == type(data).__struct_config__.tag
