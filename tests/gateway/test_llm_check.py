"""`staminad llm check` against stand-in model servers: what works, a missing endpoint, tools refused."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from staminad.cli import main
from tests.helpers.standin import Reply, StandIn

PING = Reply(tool_calls=[{"name": "ping", "arguments": {"text": "pong"}}])


def _sweep(tmp: Path, models: list[tuple[str, str, list[str]]]) -> Path:
    tables = "".join(
        f'\n[[llm.models]]\nname = "{name}"\nendpoint = "{url}"\nprotocols = {protocols!r}\n'
        for name, url, protocols in models
    )
    path = tmp / "grid.toml"
    path.write_text(textwrap.dedent('name = "grid"\n[matrix]\nagents = ["reference"]\n[llm]\n') + tables)
    return path


def test_every_listed_protocol_answering_with_a_tool_call_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each protocol a model lists gets one tool-calling request; all answered with the tool call: exit 0."""
    with StandIn([PING] * 3, model="a") as a:
        path = _sweep(tmp_path, [("a", a.url, ["openai-chat", "openai-responses", "anthropic-messages"])])
        assert main(["llm", "check", str(path), "--timeout", "20"]) == 0
    out = capsys.readouterr().out
    assert out.count("ok    tool call received") == 3 and "3 of 3 work" in out
    paths = sorted(r["path"] for r in a.requests)
    assert paths == ["/v1/chat/completions", "/v1/messages", "/v1/responses"]
    assert all(r["body"]["tools"] for r in a.requests)  # tool calling is what is checked
    assert next(r for r in a.requests if r["path"] == "/v1/chat/completions")["body"]["tool_choice"] == "auto"


def test_a_missing_anthropic_endpoint_and_a_server_without_tool_calling_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server lacking /messages fails that line (404); one started without tool calling fails with the fix."""
    with (
        StandIn([PING], model="chat-only", apis=("chat",)) as chat_only,
        StandIn([PING], model="no-tools", tools=False) as no_tools,
    ):
        path = _sweep(
            tmp_path,
            [
                ("chat-only", chat_only.url, ["openai-chat", "anthropic-messages"]),
                ("no-tools", no_tools.url, ["openai-chat"]),
            ],
        )
        assert main(["llm", "check", str(path), "--timeout", "20"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert "openai-chat         ok    tool call received" in lines[0]
    assert "anthropic-messages  FAIL  not served (404): the server has no /messages endpoint" in lines[1]
    assert lines[2].startswith("no-tools") and "FAIL  refused (400)" in lines[2]
    assert "--enable-auto-tool-choice" in lines[2] and "start the server with tool calling" in lines[2]
    assert lines[-1] == "1 of 3 work; fix the FAIL lines first"


def test_a_call_answered_as_text_and_an_unreachable_server_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model that answers in prose (no tool-call parser) and a port nobody listens on each get a FAIL line."""
    with StandIn([Reply(content='{"name": "ping", "arguments": {"text": "pong"}}')], model="prose") as prose:
        dead = prose.url.replace(str(prose.server.server_address[1]), "1")
        path = _sweep(tmp_path, [("prose", prose.url, ["openai-chat"]), ("dead", dead, ["openai-chat"])])
        assert main(["llm", "check", str(path), "--timeout", "20"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  answered without a tool call" in out and "--tool-call-parser" in out
    assert "FAIL  unreachable (ConnectError)" in out


def test_a_sweep_without_models_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing to check: one line, exit 2."""
    path = tmp_path / "plain.toml"
    path.write_text('name = "plain"\n[matrix]\nagents = ["reference"]\n')
    assert main(["llm", "check", str(path)]) == 2
    assert "has no [llm] table" in capsys.readouterr().err
