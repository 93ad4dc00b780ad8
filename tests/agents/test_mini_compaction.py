"""mini-swe-agent's context compaction in our driver (the paper's modification): what is kept, what is summarised."""

from __future__ import annotations

from typing import Any

from staminad.agents.drivers import mini_driver


def _conversation(turn_at: int = 5) -> list[dict[str, Any]]:
    """System, turn 0's task, 7 tool steps with turn 1's prompt before step `turn_at`: 17 messages."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "SYS"}, {"role": "user", "content": "TASK0"}]
    for step in range(7):
        if step == turn_at:
            messages.append({"role": "user", "content": "TURN1"})
        messages.append({"role": "assistant", "content": "", "tool_calls": [{"id": f"c{step}"}]})
        messages.append({"role": "tool", "tool_call_id": f"c{step}", "content": f"output {step} " + "x" * 400})
    return messages


def test_compaction_keeps_system_task_current_prompt_and_recent_steps() -> None:
    """Compaction keeps system prompt, first task, current prompt and recent steps, starting at an assistant call."""
    messages = _conversation(turn_at=2)  # the current prompt falls in the older part: it is kept, after the summary
    current = next(i for i, m in enumerate(messages) if m["content"] == "TURN1")
    seen: list[list[dict[str, Any]]] = []

    def summarise(older: list[dict[str, Any]]) -> str:
        seen.append(older)
        return "did steps 0-4"

    out = mini_driver.compact(messages, current, summarise)
    assert [m["content"] for m in out[:2]] == ["SYS", "TASK0"]
    assert out[2]["role"] == "user" and out[2]["content"].endswith("did steps 0-4")
    assert out[3]["content"] == "TURN1" and out[4]["role"] == "assistant"
    assert out[-2:] == messages[-2:] and len(out) < len(messages)
    assert mini_driver.estimate(out) < mini_driver.estimate(messages)
    assert seen and seen[0][-1]["role"] == "tool"  # the summariser saw the whole older part
    recent = _conversation(turn_at=5)  # the current prompt is among the recent steps: it stays where it was
    out = mini_driver.compact(recent, 12, summarise)
    assert out[3:] == recent[10:] and out[3]["role"] == "assistant" and out[5]["content"] == "TURN1"


def test_a_failed_summary_drops_the_middle_with_a_note() -> None:
    """When the model cannot write the summary (an error), the older steps are still removed, and the note says so."""

    def summarise(older: list[dict[str, Any]]) -> str:
        raise RuntimeError("context length exceeded")

    out = mini_driver.compact(_conversation(), 12, summarise)
    assert "earlier messages were removed" in out[2]["content"] and "context length exceeded" in out[2]["content"]


def test_a_short_conversation_is_left_alone() -> None:
    """Nothing between the task and the recent steps: nothing to compact, no summary asked for."""
    messages = _conversation()[:6]
    assert mini_driver.compact(messages, 1, lambda older: "unused") == messages
