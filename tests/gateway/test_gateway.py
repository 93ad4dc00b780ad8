"""The LLM gateway against a stand-in model server over real sockets: metering, outages, caps."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from protocol.events import EventData, LlmWait, kind_of
from staminad.gateway.pricing import Price
from staminad.gateway.proxy import Gateway
from staminad.gateway.routes import Call, Limits, Route
from tests.helpers import free_port
from tests.helpers.standin import Fault, Reply, StandIn

pytestmark = pytest.mark.anyio
PRICES = {"standin-1": Price(input=2.0, output=10.0)}


class Events:
    def __init__(self) -> None:
        self.seen: list[EventData] = []

    def __call__(self, data: EventData) -> None:
        self.seen.append(data)

    def kinds(self) -> list[str]:
        return [kind_of(d) for d in self.seen]


@asynccontextmanager
async def gateway(
    standin: StandIn, limits: Limits | None = None
) -> AsyncIterator[tuple[Gateway, Route, Events, list[Call]]]:
    events, calls = Events(), []

    async def record(call: Call) -> None:
        calls.append(call)

    gw = Gateway(
        standin.url, "real-key", PRICES, limits or Limits(backoff_start=0.05, outage_timeout=2.0), events, record
    )
    async with anyio.create_task_group() as tg:
        await tg.start(gw.serve, ["127.0.0.1"], free_port())
        route = gw.route("sw", 7)
        route.attempt_id, route.turn = 70, 3
        yield gw, route, events, calls
        tg.cancel_scope.cancel()


def _chat(stream: bool = False) -> dict[str, Any]:
    return {"model": "standin-1", "stream": stream, "messages": [{"role": "user", "content": "build it " * 40}]}


async def test_whole_and_streamed_calls_are_metered_and_attributed() -> None:
    """Usage and cost land on the scenario, turn and attempt; the real key replaces the harness's."""
    with StandIn([Reply(content="done"), Reply(content="streamed answer " * 5)]) as standin:
        async with gateway(standin) as (gw, route, events, calls), httpx.AsyncClient() as client:
            base = gw.base_url(route, "127.0.0.1")
            r = await client.post(f"{base}/chat/completions", json=_chat(), headers={"authorization": "Bearer x"})
            assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "done"
            async with client.stream("POST", f"{base}/chat/completions", json=_chat(stream=True)) as s:
                text = (await s.aread()).decode()
            assert text.count("data:") >= 5 and text.rstrip().endswith("data: [DONE]")
        assert standin.requests[0]["headers"]["authorization"] == "Bearer real-key"
        assert standin.requests[1]["body"]["stream_options"] == {"include_usage": True}
    assert [c.streamed for c in calls] == [False, True]
    assert all(c.usage.input > 0 and c.usage.output > 0 and c.attempt_id == 70 and c.turn == 3 for c in calls)
    expected = sum((c.usage.input * 2.0 + c.usage.output * 10.0) / 1e6 for c in calls)
    assert route.spent == pytest.approx(expected) and gw.sweep_spent == pytest.approx(expected)
    assert events.kinds() == ["llm_call", "llm_call"]


async def test_anthropic_and_responses_formats_are_metered() -> None:
    """Anthropic messages (streamed) and OpenAI responses (whole) report their tokens too."""
    with StandIn([Reply(content="hi"), Reply(content="there")]) as standin:
        async with gateway(standin) as (gw, route, _, calls), httpx.AsyncClient() as client:
            base = gw.base_url(route, "127.0.0.1")
            async with client.stream(
                "POST",
                f"{base}/messages",
                json={"model": "standin-1", "stream": True, "messages": [{"role": "user", "content": "x" * 400}]},
            ) as s:
                await s.aread()
            r = await client.post(f"{base}/responses", json={"model": "standin-1", "input": "y" * 400})
            assert r.status_code == 200
        assert standin.requests[0]["headers"]["x-api-key"] == "real-key"
    assert [(c.api, c.usage.input > 90, c.usage.output > 0) for c in calls] == [
        ("anthropic", True, True),
        ("responses", True, True),
    ]


async def test_upstream_429_and_500_become_waits_not_failures() -> None:
    """Rate limits (Retry-After honoured) and server errors are waited out, then the call goes through."""
    with StandIn([Reply(content="finally")]) as standin:
        standin.faults.extend([Fault("status", 429, retry_after=0.1), Fault("status", 500)])
        async with gateway(standin) as (gw, route, events, calls), httpx.AsyncClient(timeout=30) as client:
            r = await client.post(f"{gw.base_url(route, '127.0.0.1')}/chat/completions", json=_chat())
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "finally"
    waits = [d for d in events.seen if isinstance(d, LlmWait)]
    assert [w.reason for w in waits] == ["upstream answered 429", "upstream answered 500"]
    assert waits[0].wait_seconds == 0.1 and route.waited > 0.1
    assert route.unavailable == "" and len(calls) == 1


async def test_a_connection_lost_after_sending_is_never_sent_again() -> None:
    """A connection lost after sending is never re-sent: one upstream request, the attempt llm_unavailable."""
    with StandIn([Reply(content="never asked for")]) as standin:
        standin.faults.append(Fault("reset"))
        async with gateway(standin) as (gw, route, events, _), httpx.AsyncClient(timeout=30) as client:
            r = await client.post(f"{gw.base_url(route, '127.0.0.1')}/chat/completions", json=_chat())
        assert len(standin.requests) == 1
    assert r.status_code == 503 and "not sent again" in route.unavailable
    assert "llm_wait" not in events.kinds() and "llm_unavailable" in events.kinds()


async def test_an_endpoint_refusing_connections_is_waited_out_then_unavailable() -> None:
    """A refused connection provably never reached the model: retried with backoff until outage_timeout."""
    port = free_port()  # nothing listens there
    gw = Gateway(f"http://127.0.0.1:{port}/v1", "", PRICES, Limits(backoff_start=0.05, outage_timeout=0.6), Events())
    events = gw.emit
    assert isinstance(events, Events)
    async with anyio.create_task_group() as tg:
        await tg.start(gw.serve, ["127.0.0.1"], free_port())
        route = gw.route("sw", 1)
        async with httpx.AsyncClient(timeout=30) as client:
            r = await client.post(f"{gw.base_url(route, '127.0.0.1')}/chat/completions", json=_chat())
        tg.cancel_scope.cancel()
    waits = [d for d in events.seen if isinstance(d, LlmWait)]
    assert r.status_code == 503 and len(waits) >= 2 and all("unreachable (ConnectError)" in w.reason for w in waits)
    assert "gave up after waiting" in route.unavailable


async def test_a_long_outage_marks_the_attempt_llm_unavailable() -> None:
    """Past outage_timeout the harness gets a 503 and the attempt is flagged for an infra retry."""
    with StandIn() as standin:
        standin.faults.extend([Fault("status", 503)] * 50)
        limits = Limits(backoff_start=0.1, outage_timeout=0.5)
        async with gateway(standin, limits) as (gw, route, events, _), httpx.AsyncClient(timeout=30) as client:
            r = await client.post(f"{gw.base_url(route, '127.0.0.1')}/chat/completions", json=_chat())
    assert r.status_code == 503 and "model endpoint unavailable" in r.json()["error"]["message"]
    assert "503" in route.unavailable and "llm_unavailable" in events.kinds()


async def test_a_slow_first_byte_is_not_sent_again_and_a_stalled_stream_is_cut() -> None:
    """A slow first byte is not re-sent (the attempt loses its model), and a stalled stream is cut."""
    with StandIn([Reply(content="late")]) as standin:
        # Each bound is a few times what the stand-in, a thread of this process, needs on a busy machine.
        standin.faults.extend([Fault("slow", seconds=4.0)])
        limits = Limits(backoff_start=0.05, outage_timeout=10, first_byte_timeout=1.5, stream_idle_timeout=1.5)
        async with gateway(standin, limits) as (gw, route, events, _), httpx.AsyncClient(timeout=30) as client:
            r = await client.post(f"{gw.base_url(route, '127.0.0.1')}/chat/completions", json=_chat())
            assert r.status_code == 503 and "first-byte timeout of 2 s" in route.unavailable
            assert len(standin.requests) == 1 and "llm_wait" not in events.kinds()
            gw.begin_attempt(route, 71, 3)
            standin.faults.append(Fault("cut", seconds=5.0))
            with pytest.raises(httpx.RemoteProtocolError):
                async with client.stream(
                    "POST", f"{gw.base_url(route, '127.0.0.1')}/chat/completions", json=_chat(stream=True)
                ) as s:
                    await s.aread()
    assert "stream broke off" in route.unavailable


async def test_cost_caps_refuse_further_calls_with_a_clear_reason() -> None:
    """Once a scenario's spend reaches its cap, its next call is refused (402) and the route is capped."""
    with StandIn([Reply(content="a" * 4000), Reply(content="b")]) as standin:
        limits = Limits(scenario_cost_cap=0.005)
        async with gateway(standin, limits) as (gw, route, events, _), httpx.AsyncClient() as client:
            base = gw.base_url(route, "127.0.0.1")
            assert (await client.post(f"{base}/chat/completions", json=_chat())).status_code == 200
            refused = await client.post(f"{base}/chat/completions", json=_chat())
    assert refused.status_code == 402 and "scenario cost cap of $0.01 reached" in refused.text
    assert route.capped.startswith("scenario cost cap") and "llm_capped" in events.kinds()
    assert len(standin.requests) == 1


async def test_unknown_routes_and_garbage_get_clear_errors() -> None:
    """A wrong token is a 404 naming the problem; bytes that are not HTTP get a 400; the gateway keeps serving."""
    with StandIn([Reply(content="ok")]) as standin:
        async with gateway(standin) as (gw, route, _, _), httpx.AsyncClient() as client:
            r = await client.post(f"http://127.0.0.1:{gw.port}/g/nope/v1/chat/completions", json=_chat())
            assert r.status_code == 404 and "unknown gateway route" in r.text
            assert gw.port is not None
            async with await anyio.connect_tcp("127.0.0.1", gw.port) as raw:
                await raw.send(b"\x00\x01garbage\r\n\r\n")
                with anyio.fail_after(10):
                    assert (await raw.receive()).startswith(b"HTTP/1.1 400")
            r = await client.post(f"{gw.base_url(route, '127.0.0.1')}/chat/completions", json=_chat())
            assert r.status_code == 200 and json.loads(r.text)["model"] == "standin-1"


async def test_an_address_the_gateway_cannot_listen_on_is_one_line_and_frees_the_others() -> None:
    """An address the gateway cannot listen on is a one-line UsageError, and the loopback listener is closed."""
    from protocol.errors import UsageError

    async def record(call: Call) -> None:
        pass

    port = free_port()
    gw = Gateway("http://127.0.0.1:9", "k", PRICES, Limits(), lambda e: None, record)
    with pytest.raises(UsageError, match=r"cannot listen on 10\.255\.255\.1:\d+ .*must be an address of this host"):
        await gw.serve(["127.0.0.1", "10.255.255.1"], port)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
    await listener.aclose()
