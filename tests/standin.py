"""A stand-in model server: OpenAI-compatible (chat completions, responses) and Anthropic messages, over real HTTP.

It replays a script of assistant turns in order, streamed (server-sent events, usage in the last chunk
when asked) or whole, and reports token usage computed from the request and reply sizes. Faults can be
queued ahead of replies: an HTTP status (with Retry-After), a reset connection, a stall that never
answers, or a stream that stops half-way. Like a server started with some endpoints only, it can serve a
subset of the three APIs (`apis`; the others answer 404), and refuse tool calling as vLLM does when started
without `--enable-auto-tool-choice` (`tools=False`: a request with tools answers 400). Every request is
kept, so a test can check what a harness sent (its whole conversation so far, for one). This is the only
fake in the tests: no LLM runs here.
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
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{"name": ..., "arguments": {...}}]


@dataclass
class Fault:
    kind: str  # status | reset | stall | cut
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

    def next(self) -> tuple[Fault | None, Reply | None]:
        with self.lock:
            if self.faults:
                return self.faults.popleft(), None
            return None, self.replies.popleft() if self.replies else Reply(content="(script exhausted)")


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # connections the stand-in drops on purpose end in errors; they are the point


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _handler(standin: StandIn) -> type[BaseHTTPRequestHandler]:
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
            fault, reply = standin.next()
            if fault is not None:
                if self._fault(fault):
                    return
                fault, reply = None, standin.next()[1]
            assert reply is not None
            prompt_tokens = _tokens(json.dumps(body.get("messages", body.get("input", ""))))
            out_tokens = _tokens(reply.content + json.dumps(reply.tool_calls))
            if body.get("stream"):
                self._stream(api, reply, prompt_tokens, out_tokens, body, cut=False)
            else:
                self._json(200, _whole(api, standin.model, reply, prompt_tokens, out_tokens))

        def _fault(self, fault: Fault) -> bool:
            """Acts out a fault; True when the request is finished with it."""
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
            "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
        }
        for i, c in enumerate(reply.tool_calls)
    ]


def _whole(api: str, model: str, reply: Reply, pin: int, pout: int) -> dict[str, Any]:
    if api == "anthropic":
        return _anthropic_whole(model, reply, pin, pout)
    if api == "responses":
        return responses_whole(model, reply, pin, pout)
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.tool_calls:
        message["tool_calls"] = _tool_calls(reply)
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
        "usage": {
            "prompt_tokens": pin,
            "completion_tokens": pout,
            "total_tokens": pin + pout,
            "prompt_tokens_details": {"cached_tokens": 0},
        },
    }


def _events(api: str, model: str, reply: Reply, pin: int, pout: int, body: dict[str, Any]) -> list[dict[str, Any]]:
    if api == "anthropic":
        return _anthropic_events(model, reply, pin, pout)
    if api == "responses":
        return responses_events(model, reply, pin, pout)
    base: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": model}
    events = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": piece}}]}
        for piece in _pieces(reply.content)
    ]
    if reply.tool_calls:
        calls = [{"index": i, **c} for i, c in enumerate(_tool_calls(reply))]
        events.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": calls}}]})
    events.append(
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}]}
    )
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append(
            {
                **base,
                "choices": [],
                "usage": {"prompt_tokens": pin, "completion_tokens": pout, "total_tokens": pin + pout},
            }
        )
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
    blocks: list[dict[str, Any]] = [{"type": "text", "text": reply.content}] if reply.content else []
    for call in reply.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": f"toolu_standin{next(_tool_ids):06d}",
                "name": call["name"],
                "input": call["arguments"],
            }
        )
    return blocks or [{"type": "text", "text": ""}]


def _anthropic_usage(pin: int, pout: int) -> dict[str, Any]:
    return {"input_tokens": pin, "output_tokens": pout, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def _anthropic_count(body: dict[str, Any]) -> dict[str, Any]:
    """What POST /v1/messages/count_tokens answers: the prompt's size, and nothing is generated."""
    return {"input_tokens": _tokens(json.dumps([body.get("system"), body.get("messages"), body.get("tools")]))}


def _anthropic_whole(model: str, reply: Reply, pin: int, pout: int) -> dict[str, Any]:
    return {
        "id": f"msg_standin{next(_tool_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _anthropic_blocks(reply),
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": _anthropic_usage(pin, pout),
    }


def _anthropic_events(model: str, reply: Reply, pin: int, pout: int) -> list[dict[str, Any]]:
    whole = _anthropic_whole(model, reply, pin, pout)
    start = {**whole, "content": [], "stop_reason": None, "usage": _anthropic_usage(pin, 1)}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(whole["content"]):
        if block["type"] == "text":
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"])]
        else:
            events.append({"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}})
            raw = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": ""}] + [
                {"type": "input_json_delta", "partial_json": piece} for piece in _pieces(raw, 64)
            ]
        if index == 0:
            events.append({"type": "ping"})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": pout},
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
                    "arguments": json.dumps(call["arguments"]),
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


def _responses_usage(pin: int, pout: int) -> dict[str, Any]:
    return {
        "input_tokens": pin,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": pout,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": pin + pout,
    }


def responses_whole(model: str, reply: Reply, pin: int, pout: int) -> dict[str, Any]:
    """A non-streamed Responses API reply: the completed response object."""
    return _response(
        model, "completed", _responses_items(reply), _responses_usage(pin, pout), f"resp_{next(_serial):06d}"
    )


def _item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    """The events that build one output item: added (empty), its deltas and done events, done (complete)."""
    ref = {"item_id": item["id"], "output_index": index}
    if item["type"] == "message":
        text = item["content"][0]["text"]
        part = {"type": "output_text", "text": "", "annotations": []}
        at = {**ref, "content_index": 0}
        middle = [
            {"type": "response.content_part.added", **at, "part": part},
            *({"type": "response.output_text.delta", **at, "delta": p} for p in _pieces(text)),
            {"type": "response.output_text.done", **at, "text": text},
            {"type": "response.content_part.done", **at, "part": {**part, "text": text}},
        ]
        added = {**item, "status": "in_progress", "content": []}
    elif item["type"] == "function_call":
        args = item["arguments"]
        middle = [
            *({"type": "response.function_call_arguments.delta", **ref, "delta": p} for p in _pieces(args)),
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
        events += _item_events(index, item)
    events.append(
        {
            "type": "response.completed",
            "response": _response(model, "completed", items, _responses_usage(pin, pout), ident),
        }
    )
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]
