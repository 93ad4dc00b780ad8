"""The gateway's verdicts on what real models do: context refusals, in-stream provider errors, unreported usage."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from protocol.events import LlmUnavailable
from staminad.gateway.errors import context_refusal, stream_error
from tests.gateway.test_gateway import gateway
from tests.helpers.standin import Fault, Reply, StandIn

pytestmark = pytest.mark.anyio
PATHS = {"chat": "chat/completions", "responses": "responses", "anthropic": "messages"}


def _body(api: str, stream: bool, text: str = "build it " * 40) -> dict[str, Any]:
    if api == "responses":
        return {"model": "standin-1", "stream": stream, "input": text}
    return {"model": "standin-1", "stream": stream, "messages": [{"role": "user", "content": text}]}


async def _call(client: httpx.AsyncClient, base: str, api: str, stream: bool) -> tuple[int, str]:
    async with client.stream("POST", f"{base}/{PATHS[api]}", json=_body(api, stream)) as r:
        return r.status_code, (await r.aread()).decode()


def test_context_wordings_of_each_provider_are_recognised() -> None:
    """OpenAI, Anthropic, vLLM and SGLang context refusals are recognised; other 400s and other statuses are not."""
    refusals = [
        {"error": {"code": "context_length_exceeded", "message": "Your input exceeds the context window"}},
        {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 2 > 1 maximum"}},
        {"error": {"message": "This model's maximum context length is 32768 tokens. However, you requested 40000"}},
        {"error": {"message": "The input (40000 tokens) is longer than the model's context length (32768 tokens)."}},
    ]
    assert all(context_refusal(400, json.dumps(r).encode()) for r in refusals)
    assert context_refusal(413, b"prompt is too long")
    assert not context_refusal(400, json.dumps({"error": {"message": "tools[0].name is required"}}).encode())
    assert not context_refusal(500, json.dumps(refusals[0]).encode())


def test_in_stream_errors_of_each_wire_format_are_recognised() -> None:
    """Anthropic error events, Responses failures and chat error chunks are errors; ordinary events are not."""
    assert "overloaded_error" in stream_error("anthropic", {"type": "error", "error": {"type": "overloaded_error"}})
    failed = {"type": "response.failed", "response": {"error": {"code": "server_error", "message": "x"}}}
    assert "server_error" in stream_error("responses", failed)
    assert "died" in stream_error("chat", {"error": {"message": "worker died"}})
    assert stream_error("chat", {"choices": [{"delta": {"content": "hi"}}]}) == ""
    assert stream_error("anthropic", {"type": "message_delta", "delta": {}}) == ""


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
async def test_a_context_refusal_is_passed_on_noted_and_never_sent_again(api: str) -> None:
    """A context refusal is passed on, noted (not an outage) and answered by the gateway if sent again."""
    with StandIn([Reply(content="fits")]) as standin:
        standin.faults.append(Fault("context"))
        async with gateway(standin) as (gw, route, events, calls), httpx.AsyncClient(timeout=30) as client:
            base = gw.base_url(route, "127.0.0.1")
            first, again = await _call(client, base, api, False), await _call(client, base, api, False)
            assert first == again and first[0] == 400 and route.exhausted and route.unavailable == ""
            assert len(standin.requests) == 1 and not any(isinstance(e, LlmUnavailable) for e in events.seen)
            gw.begin_attempt(route, 71, 3)
            assert route.exhausted == "" and (await _call(client, base, api, False))[0] == 400
            assert route.exhausted and len(standin.requests) == 1
    assert [c.status for c in calls] == [400] and calls[0].cost == 0.0 and not calls[0].estimated


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
async def test_a_provider_error_inside_a_stream_is_an_outage(api: str) -> None:
    """A provider error inside a 200 stream marks the attempt llm_unavailable; the harness gets the stream."""
    with StandIn() as standin:
        standin.faults.append(Fault("stream_error"))
        async with gateway(standin) as (gw, route, events, calls), httpx.AsyncClient(timeout=30) as client:
            status, text = await _call(client, gw.base_url(route, "127.0.0.1"), api, True)
    assert status == 200 and ("error" in text or "failed" in text)
    assert route.unavailable.startswith("provider error inside the stream") and route.exhausted == ""
    assert any(isinstance(e, LlmUnavailable) for e in events.seen) and len(calls) == 1
    assert calls[0].usage.input > 0  # metered or estimated, never a silent zero


async def test_a_context_code_inside_a_failed_response_stream_is_exhaustion() -> None:
    """A Responses stream failing with context_length_exceeded is the context running out, not an outage."""
    event = {"type": "response.failed", "response": {"error": {"code": "context_length_exceeded", "message": "m"}}}
    assert context_refusal(400, json.dumps(event["response"]).encode())
    assert "context_length_exceeded" in stream_error("responses", event)


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
async def test_usage_the_provider_did_not_report_is_estimated_and_marked(api: str) -> None:
    """A reply without usage (streamed or whole) is recorded from its bytes, marked estimated, and priced."""
    with StandIn([Reply(content="answer " * 30, usage=False), Reply(content="more " * 30, usage=False)]) as standin:
        async with gateway(standin) as (gw, route, _, calls), httpx.AsyncClient(timeout=30) as client:
            base = gw.base_url(route, "127.0.0.1")
            assert (await _call(client, base, api, True))[0] == 200
            assert (await _call(client, base, api, False))[0] == 200
    assert [c.estimated for c in calls] == [True, True]
    assert all(c.usage.input > 50 and c.usage.output > 10 and c.cost > 0 for c in calls)
    assert route.spent == pytest.approx(sum(c.cost for c in calls))


async def test_cache_hits_reasoning_and_fragments_are_metered() -> None:
    """Cache hits are metered as cached input, and a reply's reasoning and fragments change nothing in metering."""
    reply = Reply(
        content="ok", reasoning="thinking " * 20, cached=40, fragment=3, tool_calls=[{"name": "sh", "raw": '{"c'}]
    )
    with StandIn([reply, reply]) as standin:
        async with gateway(standin) as (gw, route, _, calls), httpx.AsyncClient(timeout=30) as client:
            base = gw.base_url(route, "127.0.0.1")
            assert (await _call(client, base, "chat", True))[0] == 200
            assert (await _call(client, base, "anthropic", True))[0] == 200
    assert [(c.usage.cached, c.estimated) for c in calls] == [(40, False), (40, False)]


async def test_a_model_the_answer_names_without_a_price_is_priced_as_requested() -> None:
    """An upstream reporting a model name the table lacks is priced by the model the request asked for."""
    with StandIn([Reply(content="hi")], model="vendor/served-name") as standin:
        async with gateway(standin) as (gw, route, _, calls), httpx.AsyncClient(timeout=30) as client:
            assert (await _call(client, gw.base_url(route, "127.0.0.1"), "chat", False))[0] == 200
    assert calls[0].model == "vendor/served-name" and calls[0].cost > 0


async def test_the_stand_in_spreads_malformed_arguments_over_deltas_and_cuts_at_length() -> None:
    """Scripted misbehaviour reaches the harness through the gateway intact: fragments, raw arguments, length."""
    reply = Reply(reasoning="hmm", tool_calls=[{"name": "sh", "raw": '{"cmd": "ls -'}], fragment=3, finish="length")
    with StandIn([reply]) as standin:
        async with gateway(standin) as (gw, route, _, _), httpx.AsyncClient(timeout=30) as client:
            status, text = await _call(client, gw.base_url(route, "127.0.0.1"), "chat", True)
    chunks = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data: {")]
    deltas = [c["choices"][0]["delta"] for c in chunks if c.get("choices")]
    args = [d["tool_calls"][0]["function"]["arguments"] for d in deltas if "tool_calls" in d]
    assert status == 200 and len(args) > 3 and "".join(args) == '{"cmd": "ls -'
    assert deltas[0].get("reasoning_content") == "hmm"
    assert [c["choices"][0].get("finish_reason") for c in chunks if c.get("choices")][-1] == "length"
