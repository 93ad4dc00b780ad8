"""The fair limiter: a free slot goes to the sweep holding the fewest, so no sweep starves another."""

from __future__ import annotations

import anyio
import pytest

from staminad.engine.fair import FairLimiter

pytestmark = pytest.mark.anyio


async def test_later_sweep_gets_slots_before_an_earlier_sweeps_backlog() -> None:
    """Sweep A queues 10 jobs first, B queues 2: with 2 slots, B's jobs start as soon as slots free."""
    limiter = FairLimiter(2)
    order: list[str] = []
    release = {name: anyio.Event() for name in ("a0", "a1")}

    async def job(owner: str, name: str) -> None:
        async with limiter.slot(owner):
            order.append(name)
            if name in release:
                await release[name].wait()

    async with anyio.create_task_group() as tg:
        for i in range(10):
            tg.start_soon(job, "A", f"a{i}")
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(job, "B", "b0")
        tg.start_soon(job, "B", "b1")
        await anyio.wait_all_tasks_blocked()
        assert order == ["a0", "a1"] and limiter.in_use == 2
        release["a0"].set()
        await anyio.wait_all_tasks_blocked()
        assert order[2] == "b0"
        release["a1"].set()
    assert order[3] == "b1" and limiter.in_use == 0


async def test_cancelled_waiter_gives_nothing_away() -> None:
    """A waiter cancelled in the queue leaves the counts as they were."""
    limiter = FairLimiter(1)
    async with limiter.slot("A"):
        with anyio.move_on_after(0.01):
            async with limiter.slot("B"):
                raise AssertionError("must not get the slot")
        assert limiter.in_use == 1 and not limiter._waiting
    assert limiter.in_use == 0
