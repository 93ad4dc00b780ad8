"""`staminad llm check`: can each model's endpoint take a tool-calling request in each protocol it lists?

One small request per (model, protocol), straight to the endpoint with the model's key, each under a
bounded timeout, all at once: a vLLM or SGLang server started without tool calling (it refuses `tool_choice:
auto`, or answers the call as plain text because no tool-call parser is set), or without the Anthropic
endpoint a harness needs (404), is found in seconds instead of after a sweep of harness crashes.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from staminad.gateway.models import PROTOCOL_PATHS, ModelSpec, WireProtocol

PROMPT = 'Call the tool `ping` with text "pong". Do not answer in prose.'
_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
_DESCRIPTION = "Answers pong."
TOOL_HINT = (
    "start the server with tool calling (vLLM: --enable-auto-tool-choice --tool-call-parser <parser>; "
    "SGLang: --tool-call-parser <parser>)"
)


@dataclass(frozen=True)
class Probe:
    """What one tool-calling request to one model in one protocol showed."""

    model: str
    protocol: WireProtocol
    ok: bool
    detail: str
    seconds: float


def request_body(protocol: WireProtocol, model: str) -> dict[str, Any]:
    """The smallest tool-calling request of a protocol, with tool choice left to the model as harnesses do."""
    if protocol == "openai-chat":
        tool = {"type": "function", "function": {"name": "ping", "description": _DESCRIPTION, "parameters": _SCHEMA}}
        messages = [{"role": "user", "content": PROMPT}]
        return {"model": model, "messages": messages, "tools": [tool], "tool_choice": "auto", "max_tokens": 256}
    if protocol == "openai-responses":
        tool = {"type": "function", "name": "ping", "description": _DESCRIPTION, "parameters": _SCHEMA}
        return {"model": model, "input": PROMPT, "tools": [tool], "tool_choice": "auto", "max_output_tokens": 256}
    tool = {"name": "ping", "description": _DESCRIPTION, "input_schema": _SCHEMA}
    return {"model": model, "max_tokens": 256, "messages": [{"role": "user", "content": PROMPT}], "tools": [tool]}


def tool_called(protocol: WireProtocol, data: Any) -> bool | None:
    """True when the answer calls `ping`, False when it answers without a tool call, None when it is no answer
    of that protocol at all."""
    if not isinstance(data, dict):
        return None
    if protocol == "openai-chat":
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return None
        calls = (choices[0].get("message") or {}).get("tool_calls") or []
        return any(isinstance(c, dict) and (c.get("function") or {}).get("name") == "ping" for c in calls)
    if protocol == "openai-responses":
        items = data.get("output")
        if not isinstance(items, list):
            return None
        return any(isinstance(i, dict) and i.get("type") == "function_call" and i.get("name") == "ping" for i in items)
    blocks = data.get("content")
    if not isinstance(blocks, list):
        return None
    return any(isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == "ping" for b in blocks)


def _headers(protocol: WireProtocol, key: str) -> dict[str, str]:
    if protocol == "anthropic-messages":
        return {"anthropic-version": "2023-06-01", **({"x-api-key": key} if key else {})}
    return {"authorization": f"Bearer {key}"} if key else {}


def _error_message(raw: bytes) -> str:
    try:
        data = json.loads(raw)
    except ValueError:
        return raw[:200].decode(errors="replace").strip()
    err = data.get("error", data) if isinstance(data, dict) else data
    message = err.get("message", err) if isinstance(err, dict) else err
    return " ".join(str(message).split())[:200]


def judge(protocol: WireProtocol, status: int, raw: bytes) -> tuple[bool, str]:
    """(works, one line saying why) for an endpoint's answer to `request_body`."""
    path = PROTOCOL_PATHS[protocol]
    if status in (404, 405):
        return False, f"not served ({status}): the server has no /{path} endpoint"
    if status in (401, 403):
        return False, f"key refused ({status}): check the model's api_key_env"
    if status >= 400:
        message = _error_message(raw)
        hint = f"; {TOOL_HINT}" if "tool" in message.lower() else ""
        return False, f"refused ({status}): {message}{hint}"
    try:
        called = tool_called(protocol, json.loads(raw))
    except ValueError:
        called = None
    if called is None:
        return False, f"answered {status}, but not as {protocol}"
    if not called:
        return False, f"answered without a tool call (the call may be in its text): {TOOL_HINT}"
    return True, "tool call received"


async def probe(client: httpx.AsyncClient, model: ModelSpec, protocol: WireProtocol, key: str, timeout: float) -> Probe:
    """Send one tool-calling request and judge the answer, within `timeout` seconds."""
    url = f"{model.endpoint.rstrip('/')}/{PROTOCOL_PATHS[protocol]}"
    t0 = time.monotonic()
    try:
        with anyio.fail_after(timeout):
            answer = await client.post(url, json=request_body(protocol, model.name), headers=_headers(protocol, key))
        ok, detail = judge(protocol, answer.status_code, answer.content)
    except TimeoutError:
        ok, detail = False, f"no answer within {timeout:g} s"
    except httpx.HTTPError as exc:
        ok, detail = False, f"unreachable ({type(exc).__name__}): is the server up at {model.endpoint}?"
    return Probe(model.name, protocol, ok, detail, time.monotonic() - t0)


async def check_all(models: list[ModelSpec], keys: dict[str, str], timeout: float) -> list[Probe]:
    """Every (model, protocol) probe at once; results in the models' and protocols' order."""
    pairs = [(m, p) for m in models for p in m.protocols]
    results: list[Probe | None] = [None] * len(pairs)

    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout), trust_env=False) as client:

        async def one(i: int, model: ModelSpec, protocol: WireProtocol) -> None:
            results[i] = await probe(client, model, protocol, keys.get(model.name, ""), timeout)

        async with anyio.create_task_group() as tg:
            for i, (m, p) in enumerate(pairs):
                tg.start_soon(one, i, m, p)
    return [r for r in results if r is not None]


def format_probes(probes: list[Probe]) -> str:
    width = max([len(p.model) for p in probes] + [5])
    return "\n".join(
        f"{p.model:<{width}}  {p.protocol:<18}  {'ok  ' if p.ok else 'FAIL'}  {p.detail} ({p.seconds:.1f} s)"
        for p in probes
    )


__all__ = ["Probe", "check_all", "format_probes", "judge", "probe", "request_body", "tool_called"]
