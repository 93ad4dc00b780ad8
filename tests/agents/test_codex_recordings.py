"""The Codex adapter against real captures of codex-cli 0.163.0 (from tests/agents/test_codex_e2e.py runs)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from staminad.agents.harnesses import HARNESSES, Report

REC = Path(__file__).parent / "recordings"
SESSION = "01a23198-e982-70e0-816e-7b99de53bf56"


def _parse(recording: str, code: int) -> Report:
    return HARNESSES["codex"].parse((REC / recording).read_text(), "", code)


def test_a_captured_turn_gives_its_session_and_tokens() -> None:
    """Turn 0 (patch, command, answer): the thread id, success, and the turn's usage."""
    assert _parse("codex.jsonl", 0) == Report(session=SESSION, ok=True, input_tokens=38471, output_tokens=8760)


def test_a_captured_resume_keeps_the_session() -> None:
    """`codex exec resume` reports the same thread id; its usage is the session's running total."""
    report = _parse("codex-resume.jsonl", 0)
    assert report.session == SESSION and report.ok and report.input_tokens > 38471


def test_a_captured_api_failure_is_a_failed_harness_call() -> None:
    """An upstream 503 passed on by the gateway: codex prints turn.failed and exits 1; the message is kept."""
    report = _parse("codex-failed.jsonl", 1)
    assert not report.ok and "503 Service Unavailable" in report.error and report.session


def test_output_without_a_finished_turn_is_a_failure_even_on_exit_0() -> None:
    """A codex that stopped before turn.completed (killed, or a config error on stderr) did not succeed."""
    started = (REC / "codex.jsonl").read_text().splitlines()[0]
    report = HARNESSES["codex"].parse(started, "Error: unknown configuration field `x`\n", 0)
    assert not report.ok and report.error == "Error: unknown configuration field `x`"


def test_the_config_keeps_codex_off_the_network_and_its_retries_to_the_gateway() -> None:
    """Responses wire API at the gateway, no web search, analytics, update check or plugin fetches."""
    config = tomllib.loads(HARNESSES["codex"].files("http://gw/v1", "m")[".codex/config.toml"])
    provider = config["model_providers"][config["model_provider"]]
    assert provider["wire_api"] == "responses" and provider["base_url"] == "http://gw/v1"
    assert provider["request_max_retries"] == 0 and provider["stream_max_retries"] == 0
    assert config["web_search"] == "disabled" and config["analytics"] == {"enabled": False}
    assert config["check_for_update_on_startup"] is False
    assert not any(config["features"][f] for f in ("plugins", "apps", "remote_plugin", "in_app_updates"))
