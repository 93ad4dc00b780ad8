"""The stand-in's OpenAI Responses API, streamed and whole, in the shapes codex reads (checked over real HTTP)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.helpers.standin import Reply, StandIn

REPLY = Reply(
    content="Patching.",
    tool_calls=[
        {"name": "exec_command", "arguments": {"cmd": "ls"}},
        {"name": "apply_patch", "input": "*** Begin Patch\n*** End Patch\n"},
    ],
)


def _post(url: str, body: dict[str, Any]) -> bytes:
    request = urllib.request.Request(
        f"{url}/responses", data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return bytes(response.read())


def test_a_streamed_reply_is_named_events_from_created_to_completed() -> None:
    """Each event's `event:` line names its type; items are added, filled by deltas, done; usage comes last."""
    with StandIn([REPLY]) as standin:
        raw = _post(standin.url, {"model": "m", "stream": True, "input": [{"role": "user", "content": "hi"}]})
    blocks = [b for b in raw.decode().split("\n\n") if b.strip()]
    events = []
    for block in blocks:
        name, data = block.split("\n")
        event = json.loads(data.removeprefix("data: "))
        assert name == f"event: {event['type']}"
        events.append(event)
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [i["type"] for i in done] == ["message", "function_call", "custom_tool_call"]
    assert json.loads(done[1]["arguments"]) == {"cmd": "ls"} and done[2]["input"].startswith("*** Begin Patch")
    assert len({i["call_id"] for i in done[1:]}) == 2
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta")
    assert json.loads(deltas) == {"cmd": "ls"}
    usage = events[-1]["response"]["usage"]
    assert usage["input_tokens"] > 0 and usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_a_whole_reply_is_the_completed_response_object() -> None:
    """Not streamed: one response with status completed, the same output items, and usage."""
    with StandIn([REPLY]) as standin:
        data = json.loads(_post(standin.url, {"model": "m", "input": "hi"}))
    assert data["object"] == "response" and data["status"] == "completed"
    assert [i["type"] for i in data["output"]] == ["message", "function_call", "custom_tool_call"]
    assert data["usage"]["output_tokens"] > 0
