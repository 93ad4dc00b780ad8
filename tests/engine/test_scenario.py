"""The pause gate: scenarios waiting at it are counted, so `status` can leave them out of its running count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from staminad.engine.gate import Gate

pytestmark = pytest.mark.anyio


async def test_the_gate_counts_the_scenarios_it_holds() -> None:
    """An open gate holds nobody; a closed one counts each waiter until it opens."""
    gate = Gate()
    await gate.wait()
    assert gate.held == 0
    gate.pause()
    async with anyio.create_task_group() as tg:
        tg.start_soon(gate.wait)
        tg.start_soon(gate.wait)
        await wait_all_tasks_blocked()
        assert gate.held == 2
        gate.resume()
    assert gate.held == 0


class _Reached(Gate):
    """A gate that also says when a scenario first waits at it (so the test waits on that, not on time)."""

    def __init__(self) -> None:
        super().__init__()
        self.reached = anyio.Event()

    async def wait(self) -> None:
        self.reached.set()
        await super().wait()


async def test_a_scenario_held_at_a_pause_stays_pending(tmp_path: Path) -> None:
    """A scenario that took its slot while the sweep is paused is not recorded `running`: it ran nothing yet."""
    from staminad.bench.readme import render_readme
    from staminad.bench.scenario import ScenarioParams, generate
    from staminad.engine.scenario import ScenarioRunner
    from staminad.engine.spec import EngineSettings, ScenarioSpec
    from staminad.engine.turns import HeldScenario
    from state.store import Store

    gate = _Reached()
    gate.pause()
    async with await Store.open(tmp_path / "staminad.db") as store:
        await store.ensure_sweep("w", "w", "f", "{}")
        config = await store.ensure_configuration("w", "c", "reference", 0, "detailed")
        row = await store.ensure_scenario(config, 0)
        spec = ScenarioSpec(
            config_id=config,
            config_name="c",
            retries=0,
            feedback="detailed",
            scenario=HeldScenario.of(generate(0, ScenarioParams(turns=1))),
            language="python",
            readme=render_readme(),
        )
        unused: Any = None  # the sandbox, adapter and marker watcher: nothing before the gate touches them
        runner = ScenarioRunner(spec, store, unused, unused, unused, EngineSettings(), lambda _: None, gate)
        async with anyio.create_task_group() as tg:
            tg.start_soon(runner.run, row.id)
            with anyio.fail_after(30):
                await gate.reached.wait()
            ((_, stored),) = await store.scenarios("w")
            assert stored.status == "pending" and gate.held == 1
            tg.cancel_scope.cancel()
