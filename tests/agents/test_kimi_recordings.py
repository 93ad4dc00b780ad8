"""The Kimi CLI adapter against real captures of kimi-cli 1.51.0 in its trixie layer, driven by the stand-in."""

from __future__ import annotations

from pathlib import Path

from staminad.agents.harnesses import HARNESSES

REC = Path(__file__).parent / "recordings"
KIMI = HARNESSES["kimi-cli"]
SESSION = "ee9f5788-bb64-4a7f-a902-560bc1c0c210"


def _parse(name: str, code: int = 0) -> tuple[str, bool, str]:
    report = KIMI.parse((REC / f"{name}.jsonl").read_text(), (REC / f"{name}.err").read_text(), code)
    return report.session, report.ok, report.error


def test_a_captured_first_call_gives_the_session_from_stderr() -> None:
    """A Shell tool call, its result, the answer on stdout; the session id only in the closing stderr line."""
    assert _parse("kimi-cli") == (SESSION, True, "")


def test_a_captured_resume_continues_the_same_session() -> None:
    """`--session ID` (kimi -r) names the same session again."""
    assert _parse("kimi-cli-resume") == (SESSION, True, "")


def test_a_call_that_ends_on_a_tool_call_or_fails_is_not_ok() -> None:
    """No final answer, or a non-zero exit: not ok, stderr's last line is the error."""
    first_line = (REC / "kimi-cli.jsonl").read_text().splitlines()[0]
    assert not KIMI.parse(first_line, "", 0).ok
    report = KIMI.parse("", "Error: model call failed\n", 1)
    assert not report.ok and report.error == "Error: model call failed"
