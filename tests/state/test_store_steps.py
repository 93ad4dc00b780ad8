"""The store's narrow reads for an engine step agree with replaying every row, whatever the history."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol.kinds import InfraKind, Outcome
from staminad.engine.position import position
from state.figures import sweep_figures
from state.store import Store, Verdict

pytestmark = pytest.mark.anyio

# (turn, attempt, infra_try, outcome): passes, failures with feedback retries, infra retries, an unfinished row.
HISTORY: list[tuple[int, int, int, Outcome | None]] = [
    (0, 1, 0, "pass"),
    (1, 1, 0, "fail"),
    (1, 2, 0, "pass"),
    (2, 1, 0, "infra"),
    (2, 1, 1, "fail"),
    (2, 2, 0, "infra"),
    (2, 2, 1, "pass"),
    (3, 1, 0, "fail"),
    (3, 2, 0, "fail"),
    (3, 3, 0, None),
]


async def test_narrow_step_reads_give_the_same_position_as_all_rows(tmp_path: Path) -> None:
    """After every recorded attempt, latest-turn rows + turns_passed yield the position replaying all rows does."""
    async with await Store.open(tmp_path / "s.db") as store:
        await store.ensure_sweep("w", "w", "fp", "{}")
        config = await store.ensure_configuration("w", "c", "reference", 2, "detailed")
        scenario = (await store.ensure_scenario(config, 0)).id
        assert await store.latest_turn_attempts(scenario) == [] and await store.turns_passed(scenario) == 0
        for turn, attempt, infra_try, outcome in HISTORY:
            row = await store.begin_attempt(scenario, turn, attempt, infra_try, "turn", f"prompt {turn}")
            if outcome is not None:
                await store.tested(
                    row.id,
                    Verdict(outcome=outcome, feedback="fb", infra_kind="harness_crash" if outcome == "infra" else None),
                )
            every = await store.attempts(scenario)
            narrow = await store.latest_turn_attempts(scenario)
            assert {r.turn for r in narrow} == {turn} and narrow == [r for r in every if r.turn == turn]
            passed = await store.turns_passed(scenario)
            assert passed == len({r.turn for r in every if r.outcome == "pass"})
            for retries in (0, 2):
                assert position(narrow, 5, retries, 1, turns_passed=passed) == position(every, 5, retries, 1)


async def test_sweep_figures_per_scenario_agree_with_replaying_every_attempt(tmp_path: Path) -> None:
    """state.figures' last infra kind and tested flag per scenario are what replaying all attempt rows gives."""
    async with await Store.open(tmp_path / "s.db") as store:
        await store.ensure_sweep("w", "w", "fp", "{}")
        config = await store.ensure_configuration("w", "c", "reference", 2, "detailed")
        ids = [(await store.ensure_scenario(config, seed)).id for seed in range(3)]
        kinds: dict[Outcome, InfraKind | None] = {"infra": "harness_crash", "fail": None, "pass": None}
        # Scenario 0 gets the history out of attempt order (the last row written is not the last attempt),
        # scenario 1 only infra failures, scenario 2 nothing.
        for turn, attempt, infra_try, outcome in [*reversed(HISTORY[:-1]), (0, 1, 0, "infra"), (0, 1, 1, "infra")]:
            assert outcome is not None  # the unfinished row is left out above
            scenario = ids[0] if (turn, attempt, infra_try, outcome) in HISTORY else ids[1]
            row = await store.begin_attempt(scenario, turn, attempt, infra_try, "turn", "p")
            await store.tested(row.id, Verdict(outcome=outcome, feedback="", infra_kind=kinds[outcome]))
            figures = await store.read(sweep_figures, "w")
            progress = await store.progress("w")
            assert {s.id: s.end_kind for s in figures.scenarios} == {
                sid: next((p.infra_kind for p in reversed(progress) if p.scenario_id == sid), None) for sid in ids
            }
            assert {s.id for s in figures.scenarios if s.tested} == {
                p.scenario_id for p in progress if p.outcome in ("pass", "fail")
            }


async def test_results_compressed_where_the_suite_ran_are_stored_as_the_store_compresses_them(tmp_path: Path) -> None:
    """A verdict's results given already compressed (a worker's `SuiteVerdict`) read back as given uncompressed."""
    import zlib

    import msgspec

    results = [{"name": "t1", "passed": True}, {"name": "t2", "passed": False, "message": "no"}]
    async with await Store.open(tmp_path / "s.db") as store:
        await store.ensure_sweep("w", "w", "fp", "{}")
        config = await store.ensure_configuration("w", "c", "reference", 2, "detailed")
        scenario = (await store.ensure_scenario(config, 0)).id
        plain = await store.begin_attempt(scenario, 0, 1, 0, "turn", "p")
        await store.tested(plain.id, Verdict(outcome="fail", results=results))
        packed = await store.begin_attempt(scenario, 0, 2, 0, "turn", "p")
        await store.tested(packed.id, Verdict(outcome="fail", compressed=zlib.compress(msgspec.json.encode(results))))
        assert await store.attempt_results(packed.id) == await store.attempt_results(plain.id) == results
