"""A large sweep is laid out lazily: only a window of its scenarios is recorded and held in memory at a time,
and status says how far the expansion got."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from protocol import Cancel, GetSweep, ListScenarios, ScenarioList, SweepInfo
from staminad.commands.clients import info_lines
from staminad.engine.expand import window
from tests.helpers.inprocess import events, request, running_daemon, submit, until
from tests.helpers.sweeps import write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]


async def test_a_large_sweep_materialises_only_its_window(tmp_path: Path) -> None:
    """A 200-scenario sweep materialises only its window of 8, says so in status, and a cancel ends it."""
    path = write_sweep(tmp_path, "wide", ["manual"], seeds="0-199", turns=1)
    path.write_text(path.read_text().replace("parallel = 4", "parallel = 2"))
    state = tmp_path / "st"
    limit = window(2)
    async with running_daemon(state, max_parallel=64) as daemon, events(state, ("wide",)) as stream:
        await submit(state, path)
        await until(stream, "manual_prompt")
        with anyio.fail_after(120):  # status is asked until the expansion waits for a job to end
            while True:
                info = await request(state, GetSweep(sweep="wide"))
                assert isinstance(info, SweepInfo)
                if info.expanding == limit:
                    break
                await anyio.sleep(0.05)
        assert daemon.expanding["wide"] == (limit, 200)
        assert (info.expanding, info.expand_total, info.active, info.queued) == (limit, 200, 2, limit - 2)
        assert f"expanding: {limit} of 200" in info_lines(info)[0]
        listed = await request(state, ListScenarios(sweep="wide"))
        assert isinstance(listed, ScenarioList) and len(listed.scenarios) == limit  # recorded as they start
        await request(state, Cancel(sweep="wide"))
        assert "wide" not in daemon.expanding
        after = await request(state, GetSweep(sweep="wide"))
        assert after.status == "cancelled" and after.expand_total == 0
