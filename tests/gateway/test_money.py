"""Money that is not exact is never shown as exact: unpriced calls, estimated usage, abandoned calls, compactions,
and the adaptive limit seen lowering under overload and recovering (against stand-in model servers)."""

from __future__ import annotations

import anyio
import httpx
import pytest

from protocol.events import LlmCall, event_cost
from protocol.units import dollars
from staminad.agents.drivers import mini_driver
from staminad.daemon.metrics_series import gateway_metrics
from staminad.gateway.limit import LimiterStats
from staminad.gateway.proxy import COMPACTION_HEADER, Gateway
from staminad.gateway.routes import Call, Limits
from tests.gateway.test_gateway import PRICES, _chat, gateway
from tests.helpers import free_port
from tests.helpers.standin import Fault, Reply, StandIn

pytestmark = pytest.mark.anyio


async def test_a_model_without_a_price_is_recorded_unpriced_not_free() -> None:
    """A call to a model no price names is recorded and announced as unpriced, and every view says so."""
    calls: list[Call] = []
    seen: list[object] = []

    async def record(call: Call) -> None:
        calls.append(call)

    with StandIn([Reply(content="ok")]) as standin:
        gw = Gateway(standin.url, "", {}, Limits(), seen.append, record)
        async with anyio.create_task_group() as tg, httpx.AsyncClient(timeout=30) as client:
            await tg.start(gw.serve, ["127.0.0.1"], free_port())
            route = gw.route("sw", 1)
            r = await client.post(f"{gw.base_url(route, '127.0.0.1')}/chat/completions", json=_chat())
            tg.cancel_scope.cancel()
    (call,) = calls
    (event,) = [e for e in seen if isinstance(e, LlmCall)]
    assert r.status_code == 200 and call.unpriced and call.cost == 0.0 and event.unpriced
    assert event_cost(event) == "unpriced" and gw.stats.flagged["unpriced"] == 1
    assert dollars(0.0, calls=1, unpriced=1) == "unpriced" and dollars(1.5, 3, 0, 1) == "$1.50 + 1 unpriced"


async def test_usage_the_provider_did_not_report_is_shown_as_an_estimate() -> None:
    """A reply without usage is metered from its size and every line showing it marks it `~ ... est.`."""
    with StandIn([Reply(content="no usage here", usage=False)]) as standin:
        async with gateway(standin) as (gw, route, events, calls), httpx.AsyncClient(timeout=30) as client:
            await client.post(f"{gw.base_url(route, '127.0.0.1')}/chat/completions", json=_chat())
    (event,) = [e for e in events.seen if isinstance(e, LlmCall)]
    assert calls[0].estimated and not calls[0].unpriced and event.estimated
    assert event_cost(event).startswith("~$") and event_cost(event).endswith(" est.")
    assert dollars(0.25, calls=4, estimated=1) == "~$0.25 est."


async def test_a_call_given_up_before_its_first_byte_is_metered_as_abandoned() -> None:
    """The upstream got the request and billed it though no answer came in time: metered, estimated, abandoned."""
    with StandIn([Reply(content="late")]) as standin:
        standin.faults.append(Fault("slow", seconds=3.0))
        limits = Limits(backoff_start=0.05, outage_timeout=5.0, first_byte_timeout=0.5)
        async with gateway(standin, limits) as (gw, route, _, calls), httpx.AsyncClient(timeout=30) as client:
            r = await client.post(f"{gw.base_url(route, '127.0.0.1')}/chat/completions", json=_chat())
    assert r.status_code == 503 and route.unavailable
    (call,) = calls
    assert call.abandoned and call.estimated and call.usage.input > 0 and call.cost > 0 and call.status == 0
    assert route.spent == pytest.approx(call.cost)


async def test_a_call_cancelled_while_the_model_works_is_metered_as_abandoned() -> None:
    """The sweep stopping (the gateway's task cancelled) mid-call still meters what the endpoint bills."""
    calls: list[Call] = []

    async def record(call: Call) -> None:
        calls.append(call)

    with StandIn([Reply(content="late")]) as standin:
        standin.faults.append(Fault("slow", seconds=2.0))
        gw = Gateway(standin.url, "", PRICES, Limits(), lambda _: None, record)
        serving = anyio.CancelScope()

        async def serve(*, task_status: anyio.abc.TaskStatus[None]) -> None:
            with serving:
                await gw.serve(["127.0.0.1"], free_port(), task_status=task_status)

        async def ask(client: httpx.AsyncClient) -> None:
            with pytest.raises(httpx.HTTPError):  # the gateway's connection goes away with its task
                await client.post(f"{gw.base_url(route, '127.0.0.1')}/chat/completions", json=_chat())

        async with anyio.create_task_group() as tg, httpx.AsyncClient(timeout=30) as client:
            await tg.start(serve)
            route = gw.route("sw", 1)
            tg.start_soon(ask, client)
            with anyio.fail_after(10):
                while not standin.active:  # noqa: ASYNC110 - the stand-in's server thread counts it: no event to await
                    await anyio.sleep(0.01)
            serving.cancel()
    (call,) = calls
    assert call.abandoned and call.estimated and call.cost > 0 and gw.sweep_spent == pytest.approx(call.cost)


async def test_a_stream_the_client_leaves_half_way_is_metered_as_abandoned() -> None:
    """A harness that drops a stream before its usage chunk: the tokens so far are metered, as an estimate."""
    calls: list[Call] = []
    recorded = anyio.Event()

    async def record(call: Call) -> None:
        calls.append(call)
        recorded.set()

    with StandIn([Reply(content="word " * 400, fragment=8)]) as standin:
        gw = Gateway(standin.url, "", PRICES, Limits(), lambda _: None, record)
        async with anyio.create_task_group() as tg, httpx.AsyncClient(timeout=30) as client:
            await tg.start(gw.serve, ["127.0.0.1"], free_port())
            url = f"{gw.base_url(gw.route('sw', 1), '127.0.0.1')}/chat/completions"
            async with client.stream("POST", url, json=_chat(stream=True)) as s:
                async for _ in s.aiter_bytes():
                    break  # the harness gives up after the first chunk
            with anyio.fail_after(10):
                await recorded.wait()  # the gateway notices the closed connection at its next write
            tg.cancel_scope.cancel()
    (call,) = calls
    assert call.abandoned and call.streamed and call.estimated and call.usage.input > 0


async def test_a_compaction_call_is_recorded_as_one() -> None:
    """The mini-swe-agent driver's summary call carries the header; the gateway records it and never forwards it."""
    assert mini_driver.COMPACTION_HEADER == COMPACTION_HEADER
    with StandIn([Reply(content="summary"), Reply(content="next")]) as standin:
        async with gateway(standin) as (gw, route, _, calls), httpx.AsyncClient(timeout=30) as client:
            url = f"{gw.base_url(route, '127.0.0.1')}/chat/completions"
            await client.post(url, json=_chat(), headers={COMPACTION_HEADER: "1"})
            await client.post(url, json=_chat())
        forwarded = [{k.lower() for k in r["headers"]} for r in standin.requests]
    assert [c.compaction for c in calls] == [True, False]
    assert all(COMPACTION_HEADER not in h for h in forwarded)


@pytest.mark.parametrize("status", [429, 503])
async def test_the_adaptive_limit_lowers_under_overload_and_recovers(status: int) -> None:
    """An overload answer halves the endpoint's limit (in the stats metrics read); good answers restore the ceiling."""
    with StandIn([Reply(content=f"r{i}") for i in range(40)]) as standin:
        standin.faults.append(Fault("status", status, retry_after=0.0))
        limits = Limits(backoff_start=0.01, backoff_max=0.05, outage_timeout=30.0, concurrency=4)
        async with gateway(standin, limits) as (gw, route, _, _), httpx.AsyncClient(timeout=30) as client:
            url = f"{gw.base_url(route, '127.0.0.1')}/chat/completions"
            seen: list[LimiterStats] = []
            while len(seen) < 40 and (not seen or seen[-1].limit < 4):  # a loaded box's slow answers trim it too
                assert (await client.post(url, json=_chat())).status_code == 200
                seen.append(gw.endpoint_stats()[0])
            assert gw.stats.endpoints is not None and gw.stats.endpoints() == [seen[-1]]
            series = {m.name: m.samples for m in gateway_metrics([gw.stats])}
    assert [(s.labels["endpoint"], s.value) for s in series["staminad_gateway_endpoint_limit"]] == [(standin.url, 4)]
    assert [s.value for s in series["staminad_gateway_endpoint_throttled"] if s.name.endswith("_total")] == [1]
    assert seen[0].limit == 2 and seen[0].throttled == 1 and seen[-1].limit == 4 and seen[-1].throttled == 1
