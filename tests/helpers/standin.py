"""A stand-in model server: OpenAI-compatible (chat completions, responses) and Anthropic messages, over real HTTP.

It replays a script of assistant turns in order, streamed (server-sent events, usage in the last chunk
when asked) or whole, and reports token usage computed from the request and reply sizes. A reply can act
out what real models do to harnesses: reasoning before the answer, tool-call arguments spread over many
small deltas, malformed or truncated arguments (`raw`), a `length` finish, prompt-cache hits, no usage
report at all. Faults can be queued ahead of replies: an HTTP status (with Retry-After), a reset
connection, a stall that never answers, a stream that stops half-way, a reply slower than the client
waits (`slow`), a context-length refusal in the provider's own words (`context`), or a provider error
inside a 200 stream (`stream_error`: Anthropic's overloaded `event: error`, the Responses API's
`response.failed`, a chat server's error chunk). Like a server started with some endpoints only, it can
serve a subset of the three APIs (`apis`; the others answer 404), and refuse tool calling as vLLM does when
started without `--enable-auto-tool-choice` (`tools=False`: a request with tools answers 400). Every request
is kept, so a test can check what a harness sent (its whole conversation so far, for one). `PerApi` keeps one
script per API, for harnesses of different protocols sharing one server. This is the only fake in the tests: no
LLM runs here.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str = ""
    # [{"name": ..., "arguments": {...}}]; `"raw": "..."` instead sends that exact arguments string (malformed,
    # truncated); `"input": "..."` a Responses custom tool call.
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    reasoning: str = ""  # thinking before the answer: chat `reasoning_content`, Anthropic thinking, a reasoning item
    finish: str = ""  # "length": the model ran out of output tokens (the reply is cut where it stands)
    fragment: int = 0  # characters per streamed delta of text and tool-call arguments (0: 16 for text, calls whole)
    cached: int = 0  # prompt tokens served from the provider's cache
    usage: bool = True  # False: the provider reports no usage at all (no usage field, no usage chunk)


@dataclass
class Fault:
    kind: str  # status | reset | stall | cut | slow | context | stream_error
    status: int = 500
    retry_after: float | None = None
    seconds: float = 0.0


class StandIn:
    def __init__(
        self,
        replies: list[Reply] | None = None,
        model: str = "standin-1",
        apis: tuple[str, ...] = ("chat", "responses", "anthropic"),
        tools: bool = True,
    ) -> None:
        self.apis, self.tools = apis, tools
        self.replies: deque[Reply] = deque(replies or [])
        self.faults: deque[Fault] = deque()
        self.requests: list[dict[str, Any]] = []
        self.gets: list[str] = []  # paths asked for with GET (model lists), kept apart from the model calls
        self.seen: list[tuple[str, str]] = []  # (method, path) of every request that arrived, any method
        self.model = model
        self.delay = 0.0  # seconds every model call takes before its answer starts (a busy server)
        self.active = 0  # model calls being answered now
        self.peak = 0  # the most model calls answered at once
        self.lock = threading.Lock()
        self.server = _Quiet(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> StandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def next(self, api: str = "") -> tuple[Fault | None, Reply | None]:
        """The next fault queued, else the next scripted reply (`api`: the protocol asked in, for `PerApi`)."""
        with self.lock:
            if self.faults:
                return self.faults.popleft(), None
            return None, self.replies.popleft() if self.replies else Reply(content="(script exhausted)")


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # connections the stand-in drops on purpose end in errors; they are the point


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _handler(standin: StandIn) -> type[BaseHTTPRequestHandler]:  # noqa: C901 - one branch per scripted behaviour of the stand-in
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def parse_request(self) -> bool:
            parsed = super().parse_request()
            if parsed:  # every method is kept, also one the stand-in then answers 501 (DELETE, PUT, ...)
                with standin.lock:
                    standin.seen.append((self.command, self.path))
            return parsed

        def do_GET(self) -> None:
            with standin.lock:
                standin.gets.append(self.path)
            self._json(200, {"object": "list", "data": [{"id": standin.model, "object": "model"}]})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with standin.lock:
                standin.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            path = self.path.split("?", 1)[0]  # Claude Code asks for /v1/messages?beta=true
            api = "anthropic" if "/messages" in path else "responses" if path.endswith("/responses") else "chat"
            if api not in standin.apis:
                self._json(404, {"detail": "Not Found"})
                return
            if body.get("tools") and not standin.tools:  # vLLM's words, started without tool calling
                message = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
                self._json(400, {"object": "error", "message": message, "type": "BadRequestError", "code": 400})
                return
            if path.endswith("/messages/count_tokens"):
                self._json(200, _anthropic_count(body))  # no model reply: the script and the faults wait
                return
            with standin.lock:
                standin.active += 1
                standin.peak = max(standin.peak, standin.active)
            try:
                time.sleep(standin.delay)
                self._answer(body)
            finally:
                with standin.lock:
                    standin.active -= 1

        def _answer(self, body: dict[str, Any]) -> None:
            path = self.path.split("?", 1)[0]  # Claude Code asks for /v1/messages?beta=true
            api = "anthropic" if path.endswith("/messages") else "responses" if path.endswith("/responses") else "chat"
            fault, reply = standin.next(api)
            if fault is not None:
                if self._fault(fault, api):
                    return
                fault, reply = None, standin.next(api)[1]
            assert reply is not None
            prompt_tokens = _tokens(json.dumps(body.get("messages", body.get("input", ""))))
            out_tokens = _tokens(reply.reasoning + reply.content + json.dumps(reply.tool_calls))
            if body.get("stream"):
                self._stream(api, reply, prompt_tokens, out_tokens, body, cut=False)
            else:
                self._json(200, _whole(api, standin.model, reply, prompt_tokens, out_tokens))

        def _fault(self, fault: Fault, api: str) -> bool:
            """Acts out a fault; True when the request is finished with it."""
            if fault.kind == "slow":
                time.sleep(fault.seconds)
                return False  # then the next reply, late
            if fault.kind == "context":
                self._json(400, _context_error(api))
                return True
            if fault.kind == "stream_error":
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for name, event in _failing_events(api, standin.model):
                    self._chunk(
                        (f"event: {name}\n" if name else "").encode() + f"data: {json.dumps(event)}\n\n".encode()
                    )
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return True
            if fault.kind == "status":
                headers = {"retry-after": str(fault.retry_after)} if fault.retry_after is not None else {}
                self._json(fault.status, {"error": {"message": "injected", "type": "server_error"}}, headers)
                return True
            if fault.kind == "reset":
                self._drop(reset=True)
                return True
            if fault.kind == "stall":
                # Silent on purpose, then gone: the client gave up long ago, and answering now would take a
                # reply (or a fault) queued for a later request.
                time.sleep(fault.seconds)
                self._drop(reset=False)
                return True
            if fault.kind == "cut":
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                self._chunk(b'data: {"choices": [{"delta": {"content": "half"}, "index": 0}]}\n\n')
                time.sleep(fault.seconds)  # then goes silent without ending the stream
                self._drop(reset=False)
                return True
            raise ValueError(fault.kind)

        def _drop(self, reset: bool) -> None:
            """Close the connection for good: with an RST when `reset`, else a plain close."""
            if reset:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            for f in (self.rfile, self.wfile):
                with contextlib.suppress(OSError):
                    f.close()
            self.connection.close()

        def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(raw)

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _stream(self, api: str, reply: Reply, pin: int, pout: int, body: dict[str, Any], cut: bool) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for event in _events(api, standin.model, reply, pin, pout, body):
                # The Messages and Responses APIs name each event on its own `event:` line before the data.
                named = f"event: {event['type']}\n" if api in ("anthropic", "responses") else ""
                self._chunk(f"{named}data: {json.dumps(event)}\n\n".encode())
            if api == "chat":
                self._chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


def _tool_calls(reply: Reply) -> list[dict[str, Any]]:
    # Ids are unique across the server's life, as the real API's are: harnesses key their own records on them.
    n = next(_serial)
    return [
        {
            "id": f"call_{n:06d}_{i}",
            "type": "function",
            "function": {"name": c["name"], "arguments": _arguments(c)},
        }
        for i, c in enumerate(reply.tool_calls)
    ]


def _arguments(call: dict[str, Any]) -> str:
    """A tool call's arguments as sent: its `raw` string verbatim (malformed on purpose), else its JSON."""
    return str(call["raw"]) if "raw" in call else json.dumps(call.get("arguments", {}))


def _chat_usage(reply: Reply, pin: int, pout: int) -> dict[str, Any]:
    return {
        "prompt_tokens": pin,
        "completion_tokens": pout,
        "total_tokens": pin + pout,
        "prompt_tokens_details": {"cached_tokens": min(reply.cached, pin)},
    }


def _chat_finish(reply: Reply) -> str:
    return reply.finish or ("tool_calls" if reply.tool_calls else "stop")


def _context_error(api: str) -> dict[str, Any]:
    """A context-length refusal (HTTP 400) in the words each provider uses."""
    if api == "anthropic":
        return {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "prompt is too long: 213762 tokens > 200000 maximum"},
        }
    message = (
        "This model's maximum context length is 131072 tokens. However, you requested 140211 tokens "
        "(132211 in the messages, 8000 in the completion). Please reduce the length of the messages or completion."
    )
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def _failing_events(api: str, model: str) -> list[tuple[str, dict[str, Any]]]:
    """A 200 stream that starts well and then carries the provider's error: (event name, data) pairs."""
    if api == "anthropic":
        start = _anthropic_whole(model, Reply(), 10, 1)
        return [
            ("message_start", {"type": "message_start", "message": {**start, "content": [], "stop_reason": None}}),
            ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ]
    if api == "responses":
        ident = f"resp_{next(_serial):06d}"
        failed = _response(model, "failed", [], None, ident)
        failed["error"] = {"code": "server_error", "message": "The model failed to generate a response."}
        return [
            (
                "response.created",
                {"type": "response.created", "response": _response(model, "in_progress", [], None, ident)},
            ),
            ("response.failed", {"type": "response.failed", "response": failed}),
        ]
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": model}
    return [
        ("", {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me"}}]}),
        ("", {"error": {"message": "upstream model worker died", "type": "server_error", "code": 500}}),
    ]


def _whole(api: str, model: str, reply: Reply, pin: int, pout: int) -> dict[str, Any]:
    if api == "anthropic":
        return _anthropic_whole(model, reply, pin, pout)
    if api == "responses":
        return responses_whole(model, reply, pin, pout)
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning  # as vLLM and SGLang reasoning parsers send it
    if reply.tool_calls:
        message["tool_calls"] = _tool_calls(reply)
    whole: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _chat_finish(reply)}],
    }
    if reply.usage:
        whole["usage"] = _chat_usage(reply, pin, pout)
    return whole


def _events(api: str, model: str, reply: Reply, pin: int, pout: int, body: dict[str, Any]) -> list[dict[str, Any]]:
    if api == "anthropic":
        return _anthropic_events(model, reply, pin, pout)
    if api == "responses":
        return responses_events(model, reply, pin, pout)
    base: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": model}

    def delta(d: dict[str, Any]) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": d}]}

    size = reply.fragment or 16
    events = [delta({"role": "assistant", "reasoning_content": p}) for p in _pieces(reply.reasoning, size) if p]
    if reply.content or not reply.reasoning:
        events += [delta({"role": "assistant", "content": p}) for p in _pieces(reply.content, size)]
    calls = _tool_calls(reply)
    if calls and not reply.fragment:  # every call whole, in one delta
        events.append(delta({"tool_calls": [{"index": i, **c} for i, c in enumerate(calls)]}))
        calls = []
    for i, call in enumerate(calls):  # the head, then the arguments a few characters at a time
        head = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
        events.append(delta({"tool_calls": [{"index": i, **head}]}))
        events += [
            delta({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
            for p in _pieces(call["function"]["arguments"], reply.fragment)
            if p
        ]
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": _chat_finish(reply)}]})
    if reply.usage and (body.get("stream_options") or {}).get("include_usage"):
        events.append({**base, "choices": [], "usage": _chat_usage(reply, pin, pout)})
    return events


def _pieces(text: str, size: int = 16) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# --- Anthropic Messages -----------------------------------------------------------------------------
# A reply is text (when any) then one `tool_use` block per tool call, as the Messages API returns them;
# streamed, the events follow the API's order: message_start, per block content_block_start /
# content_block_delta (text_delta or input_json_delta) / content_block_stop, a ping after the first
# block starts, message_delta with stop_reason and the output usage, then message_stop.

_tool_ids = itertools.count(1)


def _anthropic_blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.reasoning:
        blocks.append({"type": "thinking", "thinking": reply.reasoning, "signature": "standin-signature"})
    if reply.content:
        blocks.append({"type": "text", "text": reply.content})
    for call in reply.tool_calls:
        block = {"type": "tool_use", "id": f"toolu_standin{next(_tool_ids):06d}", "name": call["name"]}
        block["input"] = call.get("arguments", {})
        if "raw" in call:  # whole, a malformed input cannot be sent; streamed, its raw fragments are (see events)
            block["raw"] = call["raw"]
            with contextlib.suppress(ValueError):
                block["input"] = json.loads(call["raw"])
        blocks.append(block)
    return blocks or [{"type": "text", "text": ""}]


def _anthropic_usage(pin: int, pout: int, cached: int = 0) -> dict[str, Any]:
    cached = min(cached, pin)
    return {
        "input_tokens": pin - cached,
        "output_tokens": pout,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
    }


def _anthropic_count(body: dict[str, Any]) -> dict[str, Any]:
    """What POST /v1/messages/count_tokens answers: the prompt's size, and nothing is generated."""
    return {"input_tokens": _tokens(json.dumps([body.get("system"), body.get("messages"), body.get("tools")]))}


def _anthropic_whole(model: str, reply: Reply, pin: int, pout: int, keep_raw: bool = False) -> dict[str, Any]:
    stop = "max_tokens" if reply.finish == "length" else "tool_use" if reply.tool_calls else "end_turn"
    whole: dict[str, Any] = {
        "id": f"msg_standin{next(_tool_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [b if keep_raw else {k: v for k, v in b.items() if k != "raw"} for b in _anthropic_blocks(reply)],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": _anthropic_usage(pin, pout, reply.cached),
    }
    if not reply.usage:
        del whole["usage"]
    return whole


def _anthropic_events(model: str, reply: Reply, pin: int, pout: int) -> list[dict[str, Any]]:
    whole = _anthropic_whole(model, reply, pin, pout, keep_raw=True)
    start = {**whole, "content": [], "stop_reason": None, "usage": _anthropic_usage(pin, 1, reply.cached)}
    if not reply.usage:
        del start["usage"]
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    size = reply.fragment or 16
    for index, block in enumerate(whole["content"]):
        if block["type"] == "text":
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"], size)]
        elif block["type"] == "thinking":
            empty = {"type": "thinking", "thinking": "", "signature": ""}
            events.append({"type": "content_block_start", "index": index, "content_block": empty})
            deltas = [{"type": "thinking_delta", "thinking": piece} for piece in _pieces(block["thinking"], size)]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:
            head = {k: v for k, v in block.items() if k != "raw"}
            events.append({"type": "content_block_start", "index": index, "content_block": {**head, "input": {}}})
            raw = block.get("raw", json.dumps(block["input"]))
            deltas = [{"type": "input_json_delta", "partial_json": ""}] + [
                {"type": "input_json_delta", "partial_json": piece} for piece in _pieces(raw, reply.fragment or 64)
            ]
        if index == 0:
            events.append({"type": "ping"})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
            **({"usage": {"output_tokens": pout}} if reply.usage else {}),
        }
    )
    events.append({"type": "message_stop"})
    return events


# --- OpenAI Responses API ------------------------------------------------------------------------
# The shapes the real API sends (and codex's SSE reader consumes): a response object, its output items
# (`message` with `output_text` parts, `function_call` with JSON-string arguments and a call_id, or
# `custom_tool_call` with free-form input, as codex's apply_patch is declared), and when streamed the
# event sequence response.created, response.in_progress, then per item output_item.added, its deltas and
# .done events, output_item.done, and finally response.completed carrying the usage.

_serial = itertools.count(1)


def _responses_items(reply: Reply) -> list[dict[str, Any]]:
    """The reply as completed output items; a tool call with `input` (a string) is a custom tool call."""
    n = next(_serial)
    items: list[dict[str, Any]] = []
    if reply.reasoning:
        items.append(
            {"id": f"rs_{n:06d}", "type": "reasoning", "summary": [{"type": "summary_text", "text": reply.reasoning}]}
        )
    if reply.content:
        items.append(
            {
                "id": f"msg_{n:06d}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.content, "annotations": []}],
            }
        )
    for i, call in enumerate(reply.tool_calls):
        ident = f"{n:06d}_{i}"
        if isinstance(call.get("input"), str):
            items.append(
                {
                    "id": f"ctc_{ident}",
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": f"call_{ident}",
                    "name": call["name"],
                    "input": call["input"],
                }
            )
        else:
            items.append(
                {
                    "id": f"fc_{ident}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": f"call_{ident}",
                    "name": call["name"],
                    "arguments": _arguments(call),
                }
            )
    return items


def _response(
    model: str, status: str, output: list[dict[str, Any]], usage: dict[str, Any] | None, ident: str
) -> dict[str, Any]:
    return {
        "id": ident,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "error": None,
        "incomplete_details": None,
        "usage": usage,
    }


def _responses_usage(pin: int, pout: int, cached: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": pin,
        "input_tokens_details": {"cached_tokens": min(cached, pin)},
        "output_tokens": pout,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": pin + pout,
    }


def responses_whole(model: str, reply: Reply, pin: int, pout: int) -> dict[str, Any]:
    """A non-streamed Responses API reply: the completed (or, cut at its length, incomplete) response object."""
    usage = _responses_usage(pin, pout, reply.cached) if reply.usage else None
    return _finished(_response(model, "completed", _responses_items(reply), usage, f"resp_{next(_serial):06d}"), reply)


def _finished(response: dict[str, Any], reply: Reply) -> dict[str, Any]:
    if reply.finish == "length":
        return {**response, "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}
    return response


def _item_events(index: int, item: dict[str, Any], size: int = 16) -> list[dict[str, Any]]:
    """The events that build one output item: added (empty), its deltas and done events, done (complete)."""
    ref = {"item_id": item["id"], "output_index": index}
    if item["type"] == "reasoning":
        text = item["summary"][0]["text"]
        at = {**ref, "summary_index": 0}
        middle = [
            *({"type": "response.reasoning_summary_text.delta", **at, "delta": p} for p in _pieces(text, size)),
            {"type": "response.reasoning_summary_text.done", **at, "text": text},
        ]
        added = {**item, "summary": []}
    elif item["type"] == "message":
        text = item["content"][0]["text"]
        part = {"type": "output_text", "text": "", "annotations": []}
        at = {**ref, "content_index": 0}
        middle = [
            {"type": "response.content_part.added", **at, "part": part},
            *({"type": "response.output_text.delta", **at, "delta": p} for p in _pieces(text, size)),
            {"type": "response.output_text.done", **at, "text": text},
            {"type": "response.content_part.done", **at, "part": {**part, "text": text}},
        ]
        added = {**item, "status": "in_progress", "content": []}
    elif item["type"] == "function_call":
        args = item["arguments"]
        middle = [
            *({"type": "response.function_call_arguments.delta", **ref, "delta": p} for p in _pieces(args, size)),
            {"type": "response.function_call_arguments.done", **ref, "arguments": args},
        ]
        added = {**item, "status": "in_progress", "arguments": ""}
    else:
        text = item["input"]
        middle = [
            *({"type": "response.custom_tool_call_input.delta", **ref, "delta": p} for p in _pieces(text)),
            {"type": "response.custom_tool_call_input.done", **ref, "input": text},
        ]
        added = {**item, "status": "in_progress", "input": ""}
    return [
        {"type": "response.output_item.added", "output_index": index, "item": added},
        *middle,
        {"type": "response.output_item.done", "output_index": index, "item": item},
    ]


def responses_events(model: str, reply: Reply, pin: int, pout: int) -> list[dict[str, Any]]:
    """A streamed Responses API reply, event by event, each with its sequence_number."""
    ident = f"resp_{next(_serial):06d}"
    items = _responses_items(reply)
    events = [
        {"type": "response.created", "response": _response(model, "in_progress", [], None, ident)},
        {"type": "response.in_progress", "response": _response(model, "in_progress", [], None, ident)},
    ]
    for index, item in enumerate(items):
        events += _item_events(index, item, reply.fragment or 16)
    usage = _responses_usage(pin, pout, reply.cached) if reply.usage else None
    final = _finished(_response(model, "completed", items, usage, ident), reply)
    events.append({"type": f"response.{final['status']}", "response": final})
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


class OutageAt(StandIn):
    """The stand-in whose upstream fails (`faults`) once only `left` scripted replies remain: a later turn's outage."""

    def __init__(self, replies: list[Reply], left: int, faults: list[Fault], model: str = "standin-1") -> None:
        super().__init__(replies, model=model)
        self.left, self.pending = left, faults

    def next(self, api: str = "") -> tuple[Fault | None, Reply | None]:
        with self.lock:
            if self.pending and len(self.replies) == self.left:
                self.faults.extend(self.pending)
                self.pending = []
        return super().next(api)


class PerApi(StandIn):
    """The stand-in serving several harnesses at once, one per protocol (as one vLLM server serves chat, Responses
    and Anthropic messages): each API (`chat`, `responses`, `anthropic`) replays its own script, so harnesses
    running side by side do not take each other's replies."""

    def __init__(self, scripts: dict[str, list[Reply]], model: str = "standin-1") -> None:
        super().__init__(model=model, apis=tuple(scripts))
        self.scripts = {api: deque(replies) for api, replies in scripts.items()}

    def next(self, api: str = "") -> tuple[Fault | None, Reply | None]:
        with self.lock:
            if self.faults:
                return self.faults.popleft(), None
            script = self.scripts[api]
            return None, script.popleft() if script else Reply(content="(script exhausted)")
