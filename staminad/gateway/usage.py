"""Token usage from model API responses, whole or streamed, for the three wire formats the gateway passes.

OpenAI chat completions (`usage.prompt_tokens` / `completion_tokens`, cached under
`prompt_tokens_details`), OpenAI responses (`usage.input_tokens` / `output_tokens`, final
`response.completed` event when streamed) and Anthropic messages (`message_start` and
`message_delta` events when streamed, cache reads counted as cached input). Pure: bytes in, counts out.

When the provider reports nothing (a chat stream without its usage chunk, a failed response without
usage, a body that is not JSON), `estimate` counts a token per four bytes of request and answer and marks
the usage `estimated`: a call is never recorded as free because its provider kept quiet.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import msgspec

from staminad.gateway.errors import stream_error

Api = Literal["chat", "responses", "anthropic", "other"]


class Usage(msgspec.Struct, frozen=True):
    input: int = 0
    output: int = 0
    cached: int = 0  # part of `input` served from a prompt cache
    estimated: bool = False  # the provider reported nothing: counted from bytes (`estimate`)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.cached + other.cached,
            self.estimated or other.estimated,
        )

    @property
    def reported(self) -> bool:
        return self.input > 0 or self.output > 0


def estimate(request_bytes: int, answer_bytes: int) -> Usage:
    """What a call probably cost when its provider did not say: about four bytes a token, marked as estimated."""
    return Usage(max(request_bytes // 4, 1), answer_bytes // 4, 0, estimated=True)


def api_of(path: str) -> Api:
    """Which wire format a request path (after the version prefix) speaks."""
    path = path.split("?", 1)[0].strip("/")  # the query (Claude Code sends `messages?beta=true`) is no part of it
    if path.endswith("chat/completions"):
        return "chat"
    if path.endswith("responses"):
        return "responses"
    if path.endswith("messages"):
        return "anthropic"
    return "other"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def from_usage(api: Api, usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage()
    if api == "chat":
        details = usage.get("prompt_tokens_details") or {}
        return Usage(
            _int(usage.get("prompt_tokens")),
            _int(usage.get("completion_tokens")),
            _int(details.get("cached_tokens")) if isinstance(details, dict) else 0,
        )
    if api == "responses":
        details = usage.get("input_tokens_details") or {}
        return Usage(
            _int(usage.get("input_tokens")),
            _int(usage.get("output_tokens")),
            _int(details.get("cached_tokens")) if isinstance(details, dict) else 0,
        )
    if api == "anthropic":
        cached = _int(usage.get("cache_read_input_tokens"))
        fresh = _int(usage.get("input_tokens")) + _int(usage.get("cache_creation_input_tokens"))
        return Usage(fresh + cached, _int(usage.get("output_tokens")), cached)
    return Usage()


def from_body(api: Api, body: bytes) -> tuple[Usage, str]:
    """(usage, model) of a whole JSON response; zeros when the body says nothing usable."""
    try:
        data = json.loads(body)
    except ValueError:
        return Usage(), ""
    if not isinstance(data, dict):
        return Usage(), ""
    return from_usage(api, data.get("usage")), str(data.get("model") or "")


def with_stream_usage(api: Api, body: bytes) -> bytes:
    """Ask a streamed chat completion to report its usage (the final chunk carries it); else unchanged."""
    if api != "chat":
        return body
    try:
        data = json.loads(body)
    except ValueError:
        return body
    if not isinstance(data, dict) or not data.get("stream"):
        return body
    options = data.get("stream_options")
    data["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
    return json.dumps(data).encode()


class StreamMeter:
    """Reads server-sent events as they pass and keeps the usage they report."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.usage = Usage()
        self.model = ""
        self.error = ""  # the provider's error inside the stream (the first one), '' while none came
        self.size = 0  # bytes relayed
        self._buffer = b""

    def feed(self, chunk: bytes) -> None:
        self.size += len(chunk)
        self._buffer += chunk
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            line = line.strip()
            if line.startswith(b"data:"):
                self._event(line[5:].strip())
        if len(self._buffer) > 1 << 20:  # a line this long is no event we meter; do not hold it
            self._buffer = b""

    def _event(self, payload: bytes) -> None:
        if payload == b"[DONE]":
            return
        try:
            data = json.loads(payload)
        except ValueError:
            return
        if not isinstance(data, dict):
            return
        self.error = self.error or stream_error(self.api, data)
        if self.api == "chat":
            self.model = str(data.get("model") or self.model)
            if isinstance(data.get("usage"), dict):
                self.usage = from_usage("chat", data["usage"])
        elif self.api == "responses":
            response = data.get("response")
            final = data.get("type") in ("response.completed", "response.incomplete", "response.failed")
            if final and isinstance(response, dict):
                if isinstance(response.get("usage"), dict):  # a failed response may still say what it cost
                    self.usage = from_usage("responses", response["usage"])
                self.model = str(response.get("model") or self.model)
        elif self.api == "anthropic":
            kind = data.get("type")
            if kind == "message_start" and isinstance(data.get("message"), dict):
                message = data["message"]
                self.model = str(message.get("model") or self.model)
                self.usage = from_usage("anthropic", message.get("usage"))
            elif kind == "message_delta" and isinstance(data.get("usage"), dict):
                out = _int(data["usage"].get("output_tokens"))
                self.usage = Usage(self.usage.input, out, self.usage.cached)
