"""Per-endpoint concurrency: the limit holds, queued time is the platform's, and the limit adapts (AIMD)."""

from __future__ import annotations

import anyio
import httpx
import pytest

from staminad.gateway.limit import EndpointLimiter
from staminad.gateway.routes import Limits
from tests.gateway.test_gateway import _chat, gateway
from tests.helpers.standin import Fault, Reply, StandIn

pytestmark = pytest.mark.anyio


async def test_the_endpoint_never_sees_more_calls_than_the_limit_and_queue_time_is_booked() -> None:
    """Eight calls against a limit of two: at most two reach the model, and queue time is booked as waited."""
    with StandIn([Reply(content=f"r{i}") for i in range(8)]) as standin:
        standin.delay = 0.2
        limits = Limits(backoff_start=0.05, outage_timeout=5.0, concurrency=2)
        async with gateway(standin, limits) as (gw, route, _, calls), httpx.AsyncClient(timeout=60) as client:
            statuses: list[int] = []

            async def one() -> None:
                r = await client.post(f"{gw.base_url(route, '127.0.0.1')}/chat/completions", json=_chat())
                statuses.append(r.status_code)

            async with anyio.create_task_group() as tg:
                for _ in range(8):
                    tg.start_soon(one)
            stats = gw.endpoint_stats()[0]
        assert standin.peak <= 2
    assert statuses == [200] * 8 and len(calls) == 8
    assert stats.in_flight == 0 and stats.queued == 0 and stats.ceiling == 2 and stats.queued_seconds > 0
    assert route.waited == pytest.approx(stats.queued_seconds, abs=0.01)


async def test_overload_answers_halve_the_limit_and_good_answers_restore_it() -> None:
    """429s through the gateway cut the endpoint's limit and count as throttled; the call still succeeds."""
    with StandIn([Reply(content="ok")]) as standin:
        standin.faults.append(Fault("status", 429, retry_after=0.0))
        limits = Limits(backoff_start=0.05, outage_timeout=5.0, concurrency=8)
        async with gateway(standin, limits) as (gw, route, _, _), httpx.AsyncClient(timeout=30) as client:
            r = await client.post(f"{gw.base_url(route, '127.0.0.1')}/chat/completions", json=_chat())
            stats = gw.endpoint_stats()[0]
    assert r.status_code == 200 and stats.throttled == 1 and stats.limit == 4


async def test_aimd_window_decreases_multiplicatively_and_increases_additively() -> None:
    """Overload halves the window (once per cooldown), slow first bytes trim it, a window of good answers adds one."""
    limiter = EndpointLimiter("http://e", 8, cooldown=0.0)
    limiter.answered(429, 0.1)
    assert limiter.limit == 4
    limiter.answered(529, 0.1)
    assert limiter.limit == 2
    for _ in range(2):
        limiter.answered(200, 0.1)
    assert limiter.limit == 3
    limiter.answered(200, 1.0)  # ten times the best time to first byte: congestion
    assert limiter.window == pytest.approx(2.7)
    once = EndpointLimiter("http://e", 8, cooldown=3600.0)
    once.answered(429, 0.1)
    once.answered(429, 0.1)
    assert once.limit == 4 and once.throttled == 2


async def test_a_call_cancelled_while_queued_leaves_the_queue_and_slots_are_handed_on() -> None:
    """Cancelling a queued call frees nothing it did not hold; a released slot goes to the next in line."""
    limiter = EndpointLimiter("http://e", 1)
    assert await limiter.acquire() == 0.0
    with anyio.move_on_after(0.05):
        await limiter.acquire()
    assert limiter.stats().queued == 0 and limiter.in_flight == 1
    got = anyio.Event()

    async def waiter() -> None:
        await limiter.acquire()
        got.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        assert limiter.stats().queued == 1
        limiter.release()
        with anyio.fail_after(10):
            await got.wait()
    assert limiter.in_flight == 1 and limiter.stats().queued == 0
