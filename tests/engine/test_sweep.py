"""A sweep's summary (what `staminad status` shows) counts scenarios by the one rule every view counts by, and a
bug of ours inside one scenario ends that scenario alone."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from protocol.events import InfraFailure, ScenarioFinished
from protocol.kinds import InfraKind, Outcome, ScenarioStatus
from staminad.analysis.data import load
from staminad.analysis.report import scored
from staminad.engine.summary import summarize
from staminad.sandbox.base import Grant, Sandbox, ServerHandle
from staminad.sandbox.local import LocalFactory, LocalSandbox, local_factory
from staminad.sandbox.ports import PortAllocator
from state import sweeps
from state.store import Store, Verdict
from tests.helpers.sweeps import Recorder, sweep, write_sweep

pytestmark = pytest.mark.anyio

# seed: (status, turns passed, attempts as (turn, outcome, infra kind); outcome None: still running)
SCENARIOS: dict[int, tuple[ScenarioStatus, int, list[tuple[int, Outcome | None, InfraKind | None]]]] = {
    0: ("pending", 0, []),  # not started
    1: ("running", 0, [(0, None, None)]),  # on its first attempt: nothing tested yet
    2: ("pending", 0, []),  # cancelled before it started (released back to pending)
    3: ("failed", 1, [(0, "pass", None), (1, "fail", None)]),
    4: ("infra_failed", 0, [(0, "infra", "stuck")]),  # the harness ran out of infra retries: scored (paper)
    5: ("infra_failed", 1, [(0, "pass", None), (1, "infra", "sandbox_lost")]),  # a platform fault: unscored
    6: ("running", 1, [(0, "pass", None), (1, None, None)]),  # under way, one turn passed so far: unfinished
}


async def test_status_counts_scored_scenarios_by_the_reports_rule(tmp_path: Path) -> None:
    """Status's mean counts exactly the scenarios the report scores (ended, not platform-ended)."""
    db = tmp_path / "staminad.db"
    async with await Store.open(db) as store:
        await store.ensure_sweep("w", "w", "f", "{}")
        await store.set_sweep_turns("w", 3)
        config = await store.ensure_configuration("w", "c", "reference", 0, "detailed")
        for seed, (status, passed, attempts) in SCENARIOS.items():
            row = await store.ensure_scenario(config, seed)
            for turn, outcome, kind in attempts:
                attempt = await store.begin_attempt(row.id, turn, 1, 0, "change", "p")
                if outcome is not None:
                    await store.tested(attempt.id, Verdict(outcome=outcome, infra_kind=kind))
            await store.set_scenario_status(row.id, status, turns_passed=passed, reason="r")
        (summary,) = await summarize(store, "w")
    (data,) = load(db)
    by_report = {s.seed for s in data.scenarios if scored(s)}
    assert by_report == {3, 4}
    assert (summary.scenarios, summary.scored, summary.unfinished, summary.never_run, summary.unscored) == (
        7,
        2,
        2,
        2,
        1,
    )
    assert summary.mean_turns == pytest.approx(1 / 2) and summary.pass_rate == 0.0


class _BuggySandbox(LocalSandbox):
    """A local sandbox with a bug of ours planted: its first server start raises, as a broken engine part would."""

    def __init__(self, root: Path, ports: PortAllocator) -> None:
        super().__init__(root, ports)
        self.starts = 0

    async def start_server(self, timeout: float, request_timeout: float = 5.0) -> ServerHandle:
        self.starts += 1
        if self.starts == 1:
            raise RuntimeError("deliberate bug in the engine")
        return await super().start_server(timeout, request_timeout)


class _BuggyFactory(LocalFactory):
    """The local runtime, whose sandbox for one scenario (by its label) carries the planted bug."""

    def __init__(self, ports: PortAllocator, broken: str) -> None:
        super().__init__(ports)
        self.broken = broken

    def __call__(self, root: Path, label: str, grant: Grant = Grant()) -> Sandbox:  # noqa: B008 - frozen, shared
        return _BuggySandbox(root, self.ports) if label == self.broken else super().__call__(root, label, grant)


@pytest.mark.sweep
async def test_a_bug_of_ours_in_one_scenario_ends_that_scenario_alone_and_a_retry_takes_it_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug of ours ends only its scenario as infra_failed; the sweep finishes and a retry resumes it."""
    path = write_sweep(tmp_path, "contained", ["reference"], seeds="0-1", turns=2)
    state = tmp_path / "state"
    recorder = Recorder()
    ports = PortAllocator()
    with caplog.at_level(logging.ERROR, logger="staminad.engine.contain"):
        res = await sweep(path, state, _BuggyFactory(ports, "reference R=2 detailed/1"), recorder)
    s = res["reference R=2 detailed"]
    assert s.statuses == {"done": 1, "infra_failed": 1} and s.infra == {"internal_error": 1} and s.unscored == 1
    async with await Store.open(state / "staminad.db") as store:
        rows = {r.seed: r for _, r in await store.scenarios("contained")}
        assert (await sweeps.find_sweep(store, "contained")).status == "finished"  # type: ignore[union-attr]
    assert (rows[0].status, rows[0].turns_passed) == ("done", 3)
    assert rows[1].status == "infra_failed"
    assert "internal_error on turn 0: RuntimeError: deliberate bug in the engine" in rows[1].reason
    assert "staminad retry" in rows[1].reason
    (failure,) = recorder.kinds(InfraFailure)
    assert (failure.seed, failure.infra_kind) == (1, "internal_error")
    assert {(f.seed, f.status) for f in recorder.kinds(ScenarioFinished)} == {(0, "done"), (1, "infra_failed")}
    (logged,) = caplog.records
    assert logged.exc_info is not None and "deliberate bug" in str(logged.exc_info[1])

    async with await Store.open(state / "staminad.db") as store:
        await store.grant_infra_retries(rows[1].id, 2)  # what `staminad retry` does
    res = await sweep(path, state, local_factory(ports))
    assert res["reference R=2 detailed"].statuses == {"done": 2}
    async with await Store.open(state / "staminad.db") as store:
        retried = await store.attempts(rows[1].id)
    # Taken up at the step it stopped on: turn 0's harness ran once, its suite ran on the retry.
    assert [(a.turn, a.attempt, a.infra_try, a.outcome) for a in retried] == [(t, 1, 0, "pass") for t in range(3)]
