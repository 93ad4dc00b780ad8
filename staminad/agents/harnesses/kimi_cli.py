"""Kimi CLI (`kimi --print --output-format stream-json`), a JSON-lines printer on the trixie base.

It prints no token usage (the gateway meters); the session id is only in its closing stderr line. Its
`context.jsonl` (one chat message a line; `_`-prefixed roles are its bookkeeping) is the transcript.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ._kit import Harness, Layer, Report, TranscriptReader, Turn, chat_turn, json_lines

_SESSION = re.compile(r"To resume this session: kimi -r (\S+)")


def _parse(out: str, err: str, code: int) -> Report:
    found = _SESSION.findall(err)
    answered = any(m.get("role") == "assistant" and not m.get("tool_calls") for m in json_lines(out))
    ok = code == 0 and answered
    error = "" if ok else (err.strip().splitlines() or [f"exit {code}, no answer"])[-1]
    return Report(session=found[-1] if found else "", ok=ok, error=error)


def _turns(text: str, cut: bool) -> Iterator[Turn]:
    for record in json_lines(text):
        item = chat_turn(record)
        if item is not None:
            yield item


def _window(model: str, tokens: int, limit: int, at: float, env: dict[str, str], files: dict[str, str]) -> None:
    """`KIMI_MODEL_MAX_CONTEXT_SIZE`; no compaction threshold is settable."""
    env["KIMI_MODEL_MAX_CONTEXT_SIZE"] = str(tokens)


def _print(prompt: str, model: str, *session: str) -> list[str]:
    return ["kimi", "--print", "--output-format", "stream-json", "--yolo", "-m", model, *session, "-c", prompt]


HARNESS = Harness(
    name="kimi-cli",
    version="1.51.0",
    # Its web tools need lxml-html-clean, which its dependencies leave out.
    layer=Layer(install="pypi:kimi-cli==1.51.0 lxml-html-clean==0.4.3", base="trixie", sdists=("ripgrepy==2.2.0",)),
    first=lambda prompt, model: _print(prompt, model),
    resume=lambda prompt, model, session: _print(prompt, model, "--session", session),
    env=lambda base, model: {"KIMI_BASE_URL": base, "KIMI_API_KEY": "gateway", "KIMI_MODEL_NAME": model},
    parse=_parse,
    history=lambda session: (f".kimi/sessions/*/{session}",) if session else (),
    # <md5 of the work dir>/<session id>/
    transcript=TranscriptReader(patterns=(".kimi/sessions/*/*/context.jsonl",), parse=_turns),
    shell=("Shell", "command"),
    window=_window,
    caveat="upstream stopped it for the Kimi Code CLI: 1.52.0 only prints that notice and exits 0 on every "
    "command (with no arguments it fetches an installer), so the last working release is pinned; its web "
    "tools need lxml-html-clean, which its dependencies leave out",
)
