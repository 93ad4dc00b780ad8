"""The stand-in's Anthropic Messages side, checked against the wire format the real API uses.

Streamed: each SSE frame names its event on an `event:` line matching the data's `type`, in the API's
order (message_start, per block start / deltas / stop, message_delta with stop_reason and usage,
message_stop); a tool call's `input_json_delta` pieces join into its input. Whole: one message with
the same blocks. `count_tokens` answers a size and consumes no scripted reply.
"""

from __future__ import annotations

import json

import httpx

from tests.helpers.standin import Reply, StandIn

CALL = {"name": "Write", "arguments": {"file_path": "/workspace/a.py", "content": "print('hi')\n" * 20}}


def _frames(text: str) -> list[tuple[str, dict[str, object]]]:
    out = []
    for frame in text.strip().split("\n\n"):
        name, data = frame.split("\n")
        assert name.startswith("event: ") and data.startswith("data: ")
        out.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out


def test_a_streamed_tool_call_follows_the_messages_event_order() -> None:
    """Text then a tool_use block, streamed: event names, order, indices, joined partial JSON, usage."""
    with StandIn([Reply(content="Writing it.", tool_calls=[CALL])]) as standin:
        body = {
            "model": "standin-1",
            "max_tokens": 100,
            "stream": True,
            "messages": [{"role": "user", "content": "write a.py"}],
        }
        reply = httpx.post(f"{standin.url}/messages?beta=true", json=body, timeout=10)
    assert reply.headers["content-type"] == "text/event-stream"
    frames = _frames(reply.text)
    assert all(name == data["type"] for name, data in frames)
    kinds = [name for name, _ in frames]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    start = frames[0][1]["message"]
    assert isinstance(start, dict) and start["content"] == [] and start["stop_reason"] is None
    blocks: dict[int, list[dict[str, object]]] = {}
    for name, data in frames:
        if name in ("content_block_start", "content_block_delta", "content_block_stop"):
            blocks.setdefault(int(str(data["index"])), []).append(data)
    assert sorted(blocks) == [0, 1]
    text, tool = blocks[0], blocks[1]
    assert text[0]["content_block"] == {"type": "text", "text": ""} and text[-1]["type"] == "content_block_stop"
    assert "".join(d["delta"]["text"] for d in text[1:-1]) == "Writing it."  # type: ignore[index]
    head = tool[0]["content_block"]
    assert isinstance(head, dict) and head["type"] == "tool_use" and head["name"] == "Write" and head["input"] == {}
    assert str(head["id"]).startswith("toolu_")
    pieces = [d["delta"] for d in tool[1:-1]]
    assert all(p["type"] == "input_json_delta" for p in pieces)  # type: ignore[index]
    assert json.loads("".join(p["partial_json"] for p in pieces)) == CALL["arguments"]  # type: ignore[index]
    delta = frames[-2][1]
    assert delta["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert isinstance(delta["usage"], dict) and delta["usage"]["output_tokens"] > 0


def test_a_whole_reply_and_count_tokens() -> None:
    """Not streamed: one message with text and tool_use blocks; count_tokens leaves the script alone."""
    with StandIn([Reply(content="Done.", tool_calls=[CALL]), Reply(content="Next.")]) as standin:
        body = {"model": "standin-1", "max_tokens": 100, "messages": [{"role": "user", "content": "go"}]}
        count = httpx.post(f"{standin.url}/messages/count_tokens?beta=true", json=body, timeout=10).json()
        first = httpx.post(f"{standin.url}/messages", json=body, timeout=10).json()
        second = httpx.post(f"{standin.url}/messages", json=body, timeout=10).json()
    assert set(count) == {"input_tokens"} and count["input_tokens"] > 0
    assert first["type"] == "message" and first["stop_reason"] == "tool_use"
    assert [b["type"] for b in first["content"]] == ["text", "tool_use"]
    assert first["content"][1]["input"] == CALL["arguments"]
    assert first["usage"]["input_tokens"] > 0 and first["usage"]["output_tokens"] > 0
    assert second["stop_reason"] == "end_turn" and second["content"] == [{"type": "text", "text": "Next."}]
