"""An engine's outage watch: down and up recorded once each, scenarios counted while they wait, the budget bounds it."""

from __future__ import annotations

import anyio
import pytest

from staminad.sandbox.outage import EngineWatch, OutageOver, watch_for, watches_by_url

pytestmark = pytest.mark.anyio


class Engine:
    """A probe target that answers once `up` is set, counting the probes."""

    def __init__(self) -> None:
        self.up = anyio.Event()
        self.probes = 0

    async def probe(self) -> str | None:
        self.probes += 1
        return None if self.up.is_set() else "connection refused"


async def test_scenarios_wait_until_the_engine_answers_and_the_watch_says_so_meanwhile() -> None:
    """Two waiters pause while it is down (counted, since when), and both resume once it answers."""
    engine = Engine()
    watch = EngineWatch("unix:///test.sock", engine.probe)
    assert await watch.answers() is False
    began = watch.down_since
    assert began > 0 and watch.detail == "connection refused" and watch.outages == 1
    waited: list[float] = []

    async def wait() -> None:
        waited.append(await watch.ride_out(60))

    async with anyio.create_task_group() as tg:
        tg.start_soon(wait)
        tg.start_soon(wait)
        with anyio.fail_after(10):
            while watch.waiting < 2:  # noqa: ASYNC110 - the count the waiters keep is what is under test
                await anyio.sleep(0.01)
        assert watch.down_since == began  # one outage, however many wait for it
        engine.up.set()
    assert len(waited) == 2 and (watch.down, watch.waiting, watch.outages) == (False, 0, 1)
    assert watch.down_seconds > 0


async def test_the_wait_ends_at_the_budget_saying_so() -> None:
    """An engine that never answers ends the wait at the budget, naming the engine and the budget."""
    engine = Engine()
    watch = EngineWatch("tcp://10.0.0.1:2375", engine.probe)
    with pytest.raises(OutageOver) as raised:
        await watch.ride_out(0.2)
    assert "outage budget" in str(raised.value)
    assert "tcp://10.0.0.1:2375" in str(raised.value) and watch.waiting == 0 and watch.down
    assert 2 <= engine.probes <= 10  # backed off between probes, not asked in a loop


async def test_one_watch_per_engine_url_takes_the_latest_probe() -> None:
    """`watch_for` gives every sandbox of one engine the same watch, probed through the latest connection."""
    first, second = Engine(), Engine()
    second.up.set()
    watch = watch_for("unix:///one-engine.sock", first.probe)
    assert watch_for("unix:///one-engine.sock", second.probe) is watch
    assert await watch.answers() and (first.probes, second.probes) == (0, 1)
    assert watches_by_url()["unix:///one-engine.sock"] is watch
