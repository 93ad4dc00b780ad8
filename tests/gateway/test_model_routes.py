"""One gateway, several models: each scenario's route forwards to its own model's endpoint, key and price."""

from __future__ import annotations

import anyio
import httpx
import pytest

from protocol.events import EventData
from staminad.gateway.pricing import Price
from staminad.gateway.proxy import Gateway
from staminad.gateway.routes import Call, Limits, Upstream
from tests.helpers import free_port
from tests.helpers.standin import Reply, StandIn

pytestmark = pytest.mark.anyio


async def test_each_route_reaches_its_own_models_endpoint_with_its_key_and_price() -> None:
    """Each route reaches its own endpoint with its key and price; a route with no upstream uses the default."""
    calls: list[Call] = []
    seen: list[EventData] = []

    async def record(call: Call) -> None:
        calls.append(call)

    with StandIn([Reply(content="a")] * 2, model="model-a") as a, StandIn([Reply(content="b")], model="model-b") as b:
        gw = Gateway(a.url, "default-key", {}, Limits(), seen.append, record)
        async with anyio.create_task_group() as tg:
            await tg.start(gw.serve, ["127.0.0.1"], free_port())
            ra = gw.route("sw", 1, upstream=Upstream(a.url + "/", "key-a", Price(input=1.0, output=1.0), 4))
            rb = gw.route("sw", 2, upstream=Upstream(b.url, "key-b", Price(input=3.0, output=3.0)))
            rd = gw.route("sw", 3)
            chat = {"model": "model-a", "messages": [{"role": "user", "content": "hi " * 200}]}
            msg = {"model": "model-b", "max_tokens": 64, "messages": [{"role": "user", "content": "hi " * 200}]}
            async with httpx.AsyncClient(timeout=30) as client:
                ok_a = await client.post(f"{gw.base_url(ra, '127.0.0.1')}/chat/completions", json=chat)
                ok_b = await client.post(f"{gw.base_url(rb, '127.0.0.1')}/messages", json=msg)
                ok_d = await client.post(f"{gw.base_url(rd, '127.0.0.1')}/chat/completions", json=chat)
            tg.cancel_scope.cancel()
        sent_a, sent_b = list(a.requests), list(b.requests)
    assert (ok_a.status_code, ok_b.status_code, ok_d.status_code) == (200, 200, 200)
    headers_a = [{k.lower(): v for k, v in r["headers"].items()} for r in sent_a]
    headers_b = [{k.lower(): v for k, v in r["headers"].items()} for r in sent_b]
    assert [h.get("authorization") for h in headers_a] == ["Bearer key-a", "Bearer default-key"]
    assert [(r["path"], h.get("x-api-key")) for r, h in zip(sent_b, headers_b, strict=True)] == [
        ("/v1/messages", "key-b")
    ]
    by_scenario = {c.scenario_id: c for c in calls}
    assert by_scenario[1].model == "model-a" and by_scenario[2].model == "model-b"
    tokens_a = by_scenario[1].usage.input + by_scenario[1].usage.output
    tokens_b = by_scenario[2].usage.input + by_scenario[2].usage.output
    assert by_scenario[1].cost == pytest.approx(tokens_a * 1.0 / 1e6)
    assert by_scenario[2].cost == pytest.approx(tokens_b * 3.0 / 1e6)
    assert by_scenario[3].cost == 0.0  # the gateway's own endpoint, no price in its (empty) table
