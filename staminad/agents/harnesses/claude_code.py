"""Claude Code: the real `claude` binary as bundled in the Agent SDK's manylinux wheel, on the Anthropic API.

Its stream-json output ends with a result event (usage in it); its project JSONL under ~/.claude is both the
session's history and the transcript.
"""

from __future__ import annotations

from collections.abc import Iterator

from ._kit import Harness, Layer, Report, TranscriptReader, Turn, as_dict, as_int, as_str, json_lines, texts, turn


def _parse(out: str, err: str, code: int) -> Report:
    events = json_lines(out)
    results = [d for d in events if d.get("type") == "result"]
    session = next((str(d["session_id"]) for d in events if "session_id" in d), "")
    if not results:
        return Report(session=session, ok=False, error=(err.strip().splitlines() or ["no result event"])[-1])
    r = results[-1]
    usage = as_dict(r.get("usage"))
    tokens_in = (
        as_int(usage.get("input_tokens"))
        + as_int(usage.get("cache_read_input_tokens"))
        + as_int(usage.get("cache_creation_input_tokens"))
    )
    # An API error still ends with subtype "success": only is_error (and terminal_reason) tell.
    ok = not r.get("is_error") and r.get("subtype") == "success"
    error = "" if ok else str(r.get("result") or r.get("terminal_reason") or r.get("subtype"))[:300]
    return Report(
        session=str(r.get("session_id", session)),
        ok=ok,
        input_tokens=tokens_in,
        output_tokens=as_int(usage.get("output_tokens")),
        error=error,
    )


def _turns(text: str, cut: bool) -> Iterator[Turn]:
    """~/.claude/projects/<project>/<session>.jsonl: `type` user/assistant records around an Anthropic message."""
    for record in json_lines(text):
        message = record.get("message")
        if record.get("type") not in ("user", "assistant") or not isinstance(message, dict):
            continue  # summaries, system and result records, file snapshots
        content = message.get("content")
        if isinstance(content, str):
            yield turn(message.get("role"), content)
            continue
        if not isinstance(content, list):
            continue
        parts = [p for p in content if isinstance(p, dict)]
        results = [p for p in parts if p.get("type") == "tool_result"]
        if results:  # the harness answering the model's tool calls
            yield turn("tool", "\n".join(texts(p.get("content")) for p in results))
            continue
        tools = [as_str(p.get("name")) for p in parts if p.get("type") == "tool_use"]
        yield turn(message.get("role"), texts(parts), tools)


def _window(model: str, tokens: int, limit: int, at: float, env: dict[str, str], files: dict[str, str]) -> None:
    """`CLAUDE_CODE_MAX_CONTEXT_TOKENS`, `..._AUTO_COMPACT_WINDOW`; compaction at `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`."""
    env |= {
        "CLAUDE_CODE_MAX_CONTEXT_TOKENS": str(tokens),
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW": str(tokens),
        "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": str(max(1, min(100, round(at * 100)))),
    }


_FLAGS = ["--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"]
HARNESS = Harness(
    # The real `claude` binary (Claude Code 2.1.332) as bundled in the Agent SDK's manylinux wheel; checked
    # with `pip index versions claude-agent-sdk` on 2026-12-01 (0.2.189 newest).
    name="claude-code",
    protocol="anthropic-messages",
    version="2.1.332",
    layer=Layer(
        install="pypi:claude-agent-sdk==0.2.189",
        carry=(("claude_agent_sdk/_bundled/claude", "bin/claude"),),
    ),
    history=lambda session: (f".claude/projects/*/{session}.jsonl",) if session else (),
    transcript=TranscriptReader(patterns=(".claude/projects/*/*.jsonl",), parse=_turns),
    shell=("Bash", "command"),
    first=lambda prompt, model: ["claude", "-p", prompt, "--model", model, *_FLAGS],
    resume=lambda prompt, model, session: ["claude", "-p", prompt, "--model", model, "--resume", session, *_FLAGS],
    env=lambda base, model: {
        "ANTHROPIC_BASE_URL": base.removesuffix("/v1"),
        "ANTHROPIC_API_KEY": "gateway",
        # Without these it resolves api.anthropic.com (telemetry, feature flags), which
        # the sealed network drops.
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # It retries 5xx itself for minutes; the gateway owns waiting out outages.
        "CLAUDE_CODE_MAX_RETRIES": "0",
    },
    parse=_parse,
    window=_window,
    keys=("ANTHROPIC_API_KEY",),
    caveat="speaks the Anthropic messages API: the [llm] endpoint must accept it (the gateway passes it through); "
    "an API error ends with subtype success and is_error true (exit 1), so success is read from is_error",
)
