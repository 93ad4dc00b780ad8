"""The gateway forwards model inference only: other endpoints, methods and path tricks never reach the upstream."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import httpx
import pytest

from staminad.gateway.allow import upstream_target
from staminad.gateway.proxy import REFUSALS_LOGGED
from tests.gateway.test_gateway import gateway
from tests.helpers.standin import Reply, StandIn

pytestmark = pytest.mark.anyio

# (method, path after /g/<token>/v1/) that a hostile agent could try with the real key behind it.
NOT_INFERENCE = [
    ("DELETE", "files/file-abc123"),
    ("GET", "files"),
    ("POST", "files"),
    ("POST", "fine_tuning/jobs"),
    ("GET", "organization/users"),
    ("POST", "organization/admin_api_keys"),
    ("POST", "batches"),
    ("POST", "assistants"),
    ("POST", "completions"),  # legacy completions: not a format the gateway meters
    ("POST", "embeddings"),
    ("POST", "images/generations"),
    ("GET", "chat/completions"),  # lists stored completions
    ("GET", "responses/resp_123"),  # a stored response
    ("DELETE", "responses/resp_123"),
    ("POST", "responses/resp_123/cancel"),
    ("DELETE", "models/ft-standin-1"),  # deleting a fine-tuned model
    ("POST", "models"),
    ("PUT", "chat/completions"),
    ("PATCH", "messages"),
    ("OPTIONS", "chat/completions"),
    ("post", "chat/completions"),  # methods are case-sensitive
    ("POST", "messages/batches"),
    ("GET", "models/standin-1/permissions"),
    ("POST", ""),
]
TRAVERSAL = [
    "chat/completions/../../files",
    "models/../files",
    "models/standin-1/../../organization/users",
    "models/%2e%2e/files",
    "models/%2E%2E%2Ffiles",
    "%2e%2e/files",
    "models/..%2f..%2ffiles",
    "chat%2fcompletions",
    "chat/completions%3f/../../files",
    "./chat/completions",
    "chat/./completions",
    "chat//completions",
    "/chat/completions",
    "chat/completions/",
    "chat\\completions",
    "models\\..\\files",
    "chat/completions?x=/../../files",
    "chat/completions?x=%2e%2e",
    "chat/completions?a=1?b=2",
    "chat/completions#/../../files",
    "chat/completions;/../files",
    "messages?beta=true/../../files",
    "models/.",
    "models/..",
]


async def _raw(port: int, method: str, target: str, body: bytes = b"") -> tuple[int, dict[str, Any]]:
    """Send one request with the target exactly as given (an HTTP client would normalise it) -> (status, JSON)."""
    head = f"{method} {target} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
    head += f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    data = b""
    with anyio.fail_after(30):
        async with await anyio.connect_tcp("127.0.0.1", port) as conn:
            await conn.send(head.encode("latin-1") + body)
            while True:
                try:
                    data += await conn.receive()
                except anyio.EndOfStream:
                    break
    status_line, _, rest = data.partition(b"\r\n")
    payload = rest.partition(b"\r\n\r\n")[2]
    return int(status_line.split()[1]), json.loads(payload) if payload.startswith(b"{") else {}


def _body() -> bytes:
    return json.dumps({"model": "standin-1", "messages": [{"role": "user", "content": "hi " * 50}]}).encode()


async def test_other_endpoints_methods_and_path_tricks_never_reach_the_upstream(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each probe is a 403 JSON error naming it and one log line; the upstream sees none; inference still works."""
    caplog.set_level(logging.WARNING, logger="staminad.gateway")
    probes = [*NOT_INFERENCE, *(("POST", t) for t in TRAVERSAL), *(("GET", t) for t in TRAVERSAL)]
    with StandIn([Reply(content="still served")]) as standin:
        async with gateway(standin) as (gw, route, events, calls):
            assert gw.port is not None
            prefix = f"/g/{route.token}/v1/"
            for method, rest in probes[:REFUSALS_LOGGED]:
                status, answer = await _raw(gw.port, method, prefix + rest, _body())
                assert status == 403, (method, rest)
                assert "is not forwarded: only model inference" in answer["error"]["message"]
                assert answer["error"]["type"] == "gateway_error"
            logged = [r.getMessage() for r in caplog.records if "gateway refused" in r.getMessage()]
            assert len(logged) == REFUSALS_LOGGED
            assert logged[0] == (
                "gateway refused 'DELETE' '/v1/files/file-abc123' (sweep sw, scenario 7): not model inference"
            )
            for method, rest in probes[REFUSALS_LOGGED:]:
                status, _ = await _raw(gw.port, method, prefix + rest, _body())
                assert status == 403, (method, rest)
            status, answer = await _raw(gw.port, "POST", prefix + "chat/completions", _body())
            assert status == 200 and answer["choices"][0]["message"]["content"] == "still served"
    assert standin.seen == [("POST", "/v1/chat/completions")]
    assert route.refused == len(probes) and route.spent > 0 and len(calls) == 1
    assert events.kinds() == ["llm_call"]
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("staminad.gateway")]
    assert len(messages) == REFUSALS_LOGGED + 1 and "further refused requests" in messages[-1]


async def test_the_inference_endpoints_of_all_three_formats_and_model_listing_are_forwarded() -> None:
    """chat/completions, responses, messages (with Claude Code's ?beta=true), count_tokens and models pass."""
    replies = [Reply(content="chat"), Reply(content="responses"), Reply(content="anthropic")]
    with StandIn(replies) as standin:
        async with gateway(standin) as (gw, route, _, calls), httpx.AsyncClient() as client:
            base = gw.base_url(route, "127.0.0.1")
            chat = {"model": "standin-1", "messages": [{"role": "user", "content": "x" * 400}]}
            assert (await client.post(f"{base}/chat/completions", json=chat)).status_code == 200
            r = await client.post(f"{base}/responses", json={"model": "standin-1", "input": "y" * 400})
            assert r.status_code == 200
            headers = {"anthropic-version": "2023-06-01"}
            r = await client.post(f"{base}/messages?beta=true", json=chat, headers=headers)
            assert r.status_code == 200 and r.json()["content"][0]["text"] == "anthropic"
            r = await client.post(f"{base}/messages/count_tokens?beta=true", json=chat, headers=headers)
            assert r.status_code == 200 and r.json()["input_tokens"] > 0
            r = await client.get(f"{base}/models")
            assert r.status_code == 200 and r.json()["data"][0]["id"] == "standin-1"
            assert (await client.get(f"{base}/models/standin-1")).status_code == 200
    assert standin.seen == [
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/responses"),
        ("POST", "/v1/messages?beta=true"),
        ("POST", "/v1/messages/count_tokens?beta=true"),
        ("GET", "/v1/models"),
        ("GET", "/v1/models/standin-1"),
    ]
    assert standin.requests[3]["headers"]["x-api-key"] == "real-key"  # count_tokens is Anthropic's too
    assert "authorization" not in standin.requests[3]["headers"]
    metered = [(c.api, c.usage.input > 90, c.usage.output > 0) for c in calls if c.usage.input]
    assert metered == [("chat", True, True), ("responses", True, True), ("anthropic", True, True)]
    assert route.refused == 0 and route.spent > 0


@pytest.mark.parametrize(
    ("method", "rest", "target"),
    [
        ("POST", "chat/completions", "chat/completions"),
        ("POST", "messages?beta=true", "messages?beta=true"),
        ("GET", "models?client_version=0.163.0", "models?client_version=0.163.0"),
        ("GET", "models/claude-sonnet-4-5@20250929", "models/claude-sonnet-4-5@20250929"),
        ("GET", "models/meta-llama%2FLlama-3", None),
        ("GET", "models/a/b", None),
        ("POST", "responses/compact", None),
        ("POST", "chat/completions\x00", None),
        ("POST", "chat/completions\r\nx: y", None),
        ("GET", "models/ ../files", None),
    ],
)
async def test_the_allowlist_takes_each_path_in_one_spelling_only(method: str, rest: str, target: str | None) -> None:
    """The forwarded target is the request's own path when allowed; an id with a slash or a control byte is not."""
    assert upstream_target(method, rest) == target
