"""The daemon holds each sweep to its own `parallel`, inside its global limit, and says so in status."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol import GetSweep, ListSweeps, SweepInfo, SweepList
from tests.helpers.inprocess import events, request, running_daemon, submit, until
from tests.helpers.sweeps import write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]


async def test_a_sweeps_parallel_holds_under_the_daemon(tmp_path: Path) -> None:
    """`parallel = 1` with three manual scenarios: one runs, two queue, though the daemon has 8 slots."""
    path = write_sweep(tmp_path, "one-at-a-time", ["manual"], seeds="0-2", turns=1)
    path.write_text(path.read_text().replace("parallel = 4", "parallel = 1"))
    state = tmp_path / "st"
    async with running_daemon(state, max_parallel=8) as daemon, events(state, ("one-at-a-time",)) as stream:
        await submit(state, path)
        await until(stream, "manual_prompt")
        info = await request(state, GetSweep(sweep="one-at-a-time"))
        assert isinstance(info, SweepInfo)
        assert (info.parallel, info.active, info.queued) == (1, 1, 2)
        listed = await request(state, ListSweeps())
        assert isinstance(listed, SweepList) and (listed.limit, listed.active) == (8, 1)
        assert daemon.limiter.in_use == 1


async def test_the_overview_shows_a_sweeps_slots_and_queue(tmp_path: Path) -> None:
    """The monitor's status cell of a running sweep says how many of its slots are used and how many wait."""
    from tests.helpers.tui import settle
    from tui.app import make_app

    path = write_sweep(tmp_path, "queued", ["manual"], seeds="0-2", turns=1)
    path.write_text(path.read_text().replace("parallel = 4", "parallel = 1"))
    state = tmp_path / "st"
    async with running_daemon(state, max_parallel=8), events(state, ("queued",)) as stream:
        await submit(state, path)
        await until(stream, "manual_prompt")
        app = make_app(state / "staminad.sock")
        async with app.run_test(size=(160, 48)) as pilot:
            table = app.screen.query_one("#sweeps")
            await settle(pilot, lambda: table.row_count == 2)  # type: ignore[attr-defined]  # sweep, configuration
            assert str(table.get_row_at(0)[1]) == "running 1/1, 2 queued"  # type: ignore[attr-defined]


async def test_a_cancelled_sweep_leaves_no_scenario_running(tmp_path: Path) -> None:
    """Cancel while a scenario waits on its agent: the scenario goes back to pending, saying the sweep was cancelled."""
    from protocol import Cancel, ListScenarios, ScenarioList

    path = write_sweep(tmp_path, "stopped", ["manual"], seeds="0-1", turns=1)
    state = tmp_path / "st"
    async with running_daemon(state), events(state, ("stopped",)) as stream:
        await submit(state, path)
        await until(stream, "manual_prompt")
        await request(state, Cancel(sweep="stopped"))
        listed = await request(state, ListScenarios(sweep="stopped"))
        assert isinstance(listed, ScenarioList)
        assert {(row.status, row.reason) for row in listed.scenarios} == {("pending", "sweep cancelled")}
        info = await request(state, GetSweep(sweep="stopped"))
        assert info.status == "cancelled" and all("running" not in c.statuses for c in info.configurations)
