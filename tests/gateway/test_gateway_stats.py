"""The gateway's figures for the metrics: tokens, answers, upstream errors, latency, and in flight back to zero."""

from __future__ import annotations

import anyio
import httpx
import pytest

from staminad.gateway.proxy import Gateway
from staminad.gateway.routes import Limits
from staminad.gateway.stats import LIVE
from tests.gateway.test_gateway import PRICES, Events, _chat
from tests.helpers import free_port
from tests.helpers.standin import Fault, Reply, StandIn

pytestmark = pytest.mark.anyio


async def test_a_serving_gateway_counts_what_it_forwarded_and_leaves_the_live_set_when_it_stops() -> None:
    """A 429 waited out, a whole and a streamed answer: counted by kind, tokens summed, nothing left in flight."""
    with StandIn([Reply(content="whole"), Reply(content="streamed " * 5)]) as standin:
        standin.faults.append(Fault("status", 429, retry_after=0.05))
        gw = Gateway(standin.url, "k", PRICES, Limits(backoff_start=0.05, sweep_cost_cap=5.0), Events())
        async with anyio.create_task_group() as tg:
            await tg.start(gw.serve, ["127.0.0.1"], free_port())
            route = gw.route("sw", 1)
            assert LIVE[id(gw)] is gw.stats
            async with httpx.AsyncClient(timeout=30) as client:
                base = gw.base_url(route, "127.0.0.1")
                assert (await client.post(f"{base}/chat/completions", json=_chat())).status_code == 200
                async with client.stream("POST", f"{base}/chat/completions", json=_chat(stream=True)) as s:
                    await s.aread()
            tg.cancel_scope.cancel()
    stats = gw.stats
    assert id(gw) not in LIVE
    assert (stats.sweep, stats.endpoint, stats.cap) == ("sw", standin.url.rstrip("/"), 5.0)
    assert stats.errors == {"429": 1} and stats.responses == {200: 2}
    assert stats.in_flight == 0 and stats.retrying == 0
    assert stats.tokens_in > 0 and stats.tokens_out > 0 and gw.sweep_spent > 0
    assert stats.spent == pytest.approx(gw.sweep_spent)
    assert stats.latency.cumulative()[-1] == ("+Inf", 2) and stats.first_token.cumulative()[-1] == ("+Inf", 2)
