"""The Docker engine vanishing mid-sweep, through a socket proxy cut and restored (dockerd itself runs on).

While the engine does not answer, every scenario on it pauses (its outage watch says the engine is down and
how many wait), no infra retry is spent, and once it answers the sweep carries on to the results an
undisturbed run gets. Past the sweep's outage budget, the scenario ends `infra_failed` (unscored, re-runnable)
saying so, after one recorded infra failure, not its whole retry budget.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol.events import AttemptStarted, EventData
from staminad.daemon.enginestate import engines_of
from staminad.engine.config import load_sweep
from staminad.sandbox.docker.volumefactory import volume_factory
from staminad.sandbox.outage import watches_by_url
from tests.helpers.sockproxy import SocketProxy
from tests.helpers.sweeps import Recorder, sweep, write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.docker, pytest.mark.sweep]
SEEDS = 2


def _sweep_file(tmp: Path, name: str, image: str, budget: float = 600) -> Path:
    extra = f'image = "{image}"\nworkspace = "volume"\noutage_budget = {budget}\n'
    return write_sweep(
        tmp, name, ["reference"], seeds=f"0-{SEEDS - 1}", turns=2, runtime="docker", extra=extra, patient=True
    )


def _rows(state: Path, sql: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(state / "staminad.db")) as db:
        return sorted(db.execute(sql).fetchall())


ATTEMPTS = (  # every attempt: seed, turn, attempt, infra try, outcome, tests passed
    "SELECT s.seed, a.turn, a.attempt, a.infra_try, a.outcome, a.passed_tests FROM attempts a "
    "JOIN scenarios s ON s.id = a.scenario_id"
)


async def test_an_engine_cut_mid_sweep_pauses_its_scenarios_and_spends_no_infra_retry(
    tmp_path: Path, sandbox_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut at the second turn until every scenario waits, then restored: the undisturbed results, no infra retry."""
    with SocketProxy(tmp_path / "engine.sock") as proxy:
        monkeypatch.setenv("DOCKER_HOST", proxy.url)
        plain = _sweep_file(tmp_path, "calm", sandbox_image)
        sw, _ = load_sweep(plain)
        calm = await sweep(plain, tmp_path / "calm", factory=volume_factory(sw.run))

        path = _sweep_file(tmp_path, "cut", sandbox_image)
        factory = volume_factory(sw.run)
        recorder, cut = Recorder(), anyio.Event()

        def at_second_turn(data: EventData) -> None:
            if isinstance(data, AttemptStarted) and data.turn == 1 and not cut.is_set():
                proxy.cut()
                cut.set()

        recorder.hooks.append(at_second_turn)
        seen: list[tuple[bool, int]] = []

        async def restore_once_all_wait() -> None:
            await cut.wait()
            with anyio.fail_after(180):
                while True:
                    watch = watches_by_url().get(proxy.url)
                    if watch is not None and watch.down and watch.waiting == SEEDS:
                        break
                    await anyio.sleep(0.2)  # polling the watch the scenarios update, not a synchronisation
            seen.extend((not e.healthy, e.waiting) for e in engines_of(factory))
            proxy.restore()

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(restore_once_all_wait)
                cutrun = await sweep(path, tmp_path / "cut", factory=factory, recorder=recorder)
        finally:  # whatever a failed run left there
            proxy.restore()
            await volume_factory(sw.run).aclose(tmp_path / "cut" / "sandboxes" / "cut")

    assert seen == [(True, SEEDS)]  # what status, the TUI and the metrics show during the cut
    assert proxy.refused > 0  # the engine was asked, and did not answer, while cut
    for config, summary in calm.items():
        other = cutrun[config]
        assert (other.statuses, other.mean_turns, other.infra) == (summary.statuses, summary.mean_turns, summary.infra)
        assert summary.infra == {} and summary.statuses == {"done": SEEDS}
    assert _rows(tmp_path / "cut", ATTEMPTS) == _rows(tmp_path / "calm", ATTEMPTS)
    assert _rows(tmp_path / "cut", "SELECT count(*) FROM infra_events") == [(0,)]
    watch = watches_by_url()[proxy.url]
    assert (watch.down, watch.waiting) == (False, 0)


async def test_an_outage_past_the_budget_ends_the_scenario_unscored_after_one_infra_failure(
    tmp_path: Path, sandbox_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An engine gone for longer than `outage_budget` ends each scenario `infra_failed`, saying so, in one retry."""
    with SocketProxy(tmp_path / "engine.sock") as proxy:
        monkeypatch.setenv("DOCKER_HOST", proxy.url)
        path = _sweep_file(tmp_path, "gone", sandbox_image, budget=3)
        sw, _ = load_sweep(path)
        recorder = Recorder()

        def at_second_turn(data: EventData) -> None:
            if isinstance(data, AttemptStarted) and data.turn == 1:
                proxy.cut()

        recorder.hooks.append(at_second_turn)
        try:
            result = await sweep(path, tmp_path / "st", factory=volume_factory(sw.run), recorder=recorder)
        finally:
            proxy.restore()
            await volume_factory(sw.run).aclose(tmp_path / "st" / "sandboxes" / "gone")  # what the cut sweep left

    (summary,) = result.values()
    assert summary.statuses == {"infra_failed": SEEDS}
    assert summary.infra == {"engine_error": SEEDS}  # one recorded infra failure each, not ten
    reasons = [r for (r,) in _rows(tmp_path / "st", "SELECT reason FROM scenarios")]
    assert len(reasons) == SEEDS and all("the sweep's outage budget" in r for r in reasons), reasons
