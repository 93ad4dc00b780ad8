"""Qwen Code (a Gemini CLI fork), headless with `--output-format json`, on the OpenAI-compatible endpoint.

npm only: its layer must be built on a host that reaches npm. No transcript is read.
"""

from __future__ import annotations

import json
from typing import Any

from ._kit import Harness, Layer, Report, as_dict, as_int, json_lines

_SETTINGS = ".qwen/settings.json"


def _messages(out: str) -> list[dict[str, Any]]:
    """Its `--output-format json` output: an array of messages (0.10 on; older releases printed one object)."""
    start = min((k for k in (out.find("["), out.find("{")) if k >= 0), default=-1)
    if start < 0:
        return []
    try:
        data = json.loads(out[start:])
    except ValueError:
        return json_lines(out)
    items = data if isinstance(data, list) else [data]
    return [m for m in items if isinstance(m, dict)]


def _parse(out: str, err: str, code: int) -> Report:
    messages = _messages(out)
    results = [m for m in messages if m.get("type") == "result"]
    session = next((str(m["session_id"]) for m in messages if m.get("session_id")), "")
    if results:  # the array: a result message like Claude Code's, usage in it
        r = results[-1]
        usage = as_dict(r.get("usage"))
        ok = code == 0 and not r.get("is_error") and r.get("subtype") == "success"
        tin = as_int(usage.get("input_tokens")) + as_int(usage.get("cache_read_input_tokens"))
        error = "" if ok else str(as_dict(r.get("error")).get("message") or r.get("result") or f"exit {code}")[:300]
        tout = as_int(usage.get("output_tokens"))
        return Report(session=session, ok=ok, input_tokens=tin, output_tokens=tout, error=error)
    data = next((m for m in messages if "stats" in m or "response" in m or "error" in m), {})
    stats = as_dict(data.get("stats"))
    tin = tout = 0
    for model in as_dict(stats.get("models")).values():
        tokens = as_dict(as_dict(model).get("tokens"))
        tin += as_int(tokens.get("prompt"))
        tout += as_int(tokens.get("candidates"))
    error = str(as_dict(data.get("error")).get("message") or "")
    if not data:
        error = (err.strip().splitlines() or ["no JSON result"])[-1]
    return Report(
        session=str(data.get("session_id", session)),
        ok=code == 0 and not error and bool(data),
        input_tokens=tin,
        output_tokens=tout,
        error=error,
    )


def _window(model: str, tokens: int, limit: int, at: float, env: dict[str, str], files: dict[str, str]) -> None:
    """`model.generationConfig.contextWindowSize`; compaction at `model.chatCompression.contextPercentageThreshold`."""
    config = json.loads(files.get(_SETTINGS, "{}"))
    section = config.setdefault("model", {})
    section.setdefault("generationConfig", {})["contextWindowSize"] = tokens
    section.setdefault("chatCompression", {})["contextPercentageThreshold"] = at
    files[_SETTINGS] = json.dumps(config, indent=2)


_FLAGS = ["--yolo", "--output-format", "json"]
HARNESS = Harness(
    # The paper's version (its table 9); npm only, so its layer cannot be built on this machine.
    name="qwen-code",
    version="0.10.5",
    layer=Layer(install="npm:@qwen-code/qwen-code@0.10.5"),
    first=lambda prompt, model: ["qwen", "-p", prompt, "-m", model, *_FLAGS],
    resume=lambda prompt, model, session: ["qwen", "-p", prompt, "-m", model, *_FLAGS, "--resume", session],
    env=lambda base, model: {"OPENAI_BASE_URL": base, "OPENAI_API_KEY": "gateway", "OPENAI_MODEL": model},
    # Headless, it must be told to use the OpenAI-compatible endpoint (no /auth dialogue can run).
    files=lambda base, model: {
        _SETTINGS: json.dumps({"security": {"auth": {"selectedType": "openai"}}, "model": {"name": model}})
    },
    parse=_parse,
    # Sessions are JSONL under ~/.qwen/projects/<cwd>/chats, one file per session, appended to.
    history=lambda session: (f".qwen/projects/*/chats/{session}.jsonl",) if session else (),
    window=_window,
    caveat="npm only (@qwen-code/qwen-code), unreachable here: its layer must be built on a host that reaches "
    "npm; `--output-format json` prints an array of messages ending in a result message",
)
