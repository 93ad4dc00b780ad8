"""The Mistral Vibe adapter against a real capture of vibe 3.0.2 (from tests/agents/test_chat_e2e.py)."""

from __future__ import annotations

from pathlib import Path

from staminad.agents.harnesses import HARNESSES

REC = Path(__file__).parent / "recordings"
VIBE = HARNESSES["mistral-vibe"]
# What vibe 3.0.2 printed on stderr for an upstream 500 with its own retries off (it exited 2).
SERVER_ERROR = (
    "Reading API keys from the system keyring (set them as environment variables to skip this)\n"
    "Error: Server error '500 Internal Server Error' for url 'http://127.0.0.1:43383/v1/chat/completions'\n"
)


def test_a_captured_resumed_call_gives_its_session() -> None:
    """`--resume` continued session d953b8b0-...: its id, and success from the completed assistant entry."""
    report = VIBE.parse((REC / "mistral-vibe-resume.jsonl").read_text(), "", 0)
    assert report.session == "d953b8b0-3b08-da9a-2197-07956c5aac94" and report.ok and report.error == ""


def test_an_api_error_is_a_failed_call_with_its_message() -> None:
    """Exit 2 and the `Error:` line: not ok, the line kept as the error."""
    user_line = (REC / "mistral-vibe-resume.jsonl").read_text().splitlines()[0]
    report = VIBE.parse(user_line, SERVER_ERROR, 2)
    assert not report.ok and report.error.startswith("Error: Server error '500 Internal Server Error'")


def test_no_answer_on_exit_0_is_a_failure() -> None:
    """Only the user's entry and exit 0 (the run stopped before answering): not ok."""
    user_line = (REC / "mistral-vibe-resume.jsonl").read_text().splitlines()[0]
    assert not VIBE.parse(user_line, "", 0).ok
