"""Mistral Vibe (`vibe -p --output streaming`), Chat Completions with tool calls, on the trixie base.

Its session store (~/.vibe/logs/session/unified/<session>/) is rewritten on every call, so it is put back
whole after a failed call, and its transcript is read from the store's latest generation, not one file's tail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._kit import Files, Harness, Layer, Report, TranscriptReader, Turn, as_dict, as_str, json_lines, texts, turn


def _parse(out: str, err: str, code: int) -> Report:
    # `--output streaming` prints the session's entries as they settle (camelCase, no token usage: the
    # gateway meters); an API error after its own retries ends it with exit 2 and "Error: ..." on stderr.
    entries = json_lines(out)
    session = next((str(e["sessionId"]) for e in entries if e.get("sessionId")), "")
    answered = any(
        e.get("type") == "message" and e.get("role") == "assistant" and e.get("generationStatus") == "completed"
        for e in entries
    )
    problems = [line for line in err.splitlines() if line.startswith("Error:")]
    ok = code == 0 and answered and not problems
    error = "" if ok else (problems or err.strip().splitlines() or [f"exit {code}, no answer"])[-1]
    return Report(session=session, ok=ok, error=error)


# CURRENT names the latest generation; its manifest.json lists, in order, the content-named chunk files
# (chunks/<sha256>.json, each a JSON list) whose concatenation is the checkpoint's context messages
# (`{"message": {"role", "content": [text | tool_call parts]}}`). Changes since that generation sit in a
# journal that is not read: the transcript is the session as of its latest fold (the end of each call).

_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_GENERATION = re.compile(r"^[0-9]{16}$")
POINTER_LIMIT = 64 * 1024  # bytes of CURRENT or a manifest read (they are small; a larger one is not read)


def _small_json(files: Files, path: Path) -> Any:
    tail = files.tail(path, POINTER_LIMIT)
    if tail is None or tail[1]:
        return None
    try:
        return json.loads(tail[0])
    except ValueError:
        return None


def _read_store(files: Files, current: Path, limit: int) -> tuple[str, bool] | None:
    """The latest generation's context messages, one a line, from its last chunks up to `limit` bytes."""
    store = current.parent
    generation = as_str(as_dict(_small_json(files, current)).get("generation"))
    if not _GENERATION.match(generation):
        return None
    manifest = _small_json(files, store / "generations" / generation / "manifest.json")
    chunks = as_dict(as_dict(manifest).get("checkpoint"))
    digests = [d for d in chunks.get("chunks") or [] if isinstance(d, str) and _DIGEST.match(d)]
    lines: list[str] = []
    budget, cut = limit, False
    for digest in reversed(digests):
        tail = files.tail(store / "chunks" / f"{digest}.json", budget) if budget > 0 else None
        if tail is None or tail[1]:
            cut = True  # out of budget (or a chunk gone): the earlier messages are left out
            break
        budget -= len(tail[0].encode())
        try:
            entries = json.loads(tail[0])
        except ValueError:
            cut = True
            break
        lines[:0] = [json.dumps(e) for e in entries] if isinstance(entries, list) else []
    return "\n".join(lines), cut


def _turns(text: str, cut: bool) -> Iterator[Turn]:
    for record in json_lines(text):
        message = as_dict(record.get("message"))
        parts = message.get("content")
        calls = (
            [as_str(p.get("name")) for p in parts if isinstance(p, dict) and p.get("type") == "tool_call"]
            if (isinstance(parts, list))
            else []
        )
        if message.get("role"):
            yield turn(message.get("role"), texts(parts), calls)


_CONFIG = ".vibe/config.toml"


def _window(model: str, tokens: int, limit: int, at: float, env: dict[str, str], files: dict[str, str]) -> None:
    """The model's `max_context_length`; compaction at its `auto_compact_threshold` (tokens)."""
    # The config's last table is the one [[models]] entry: its keys go at the end.
    files[_CONFIG] = files[_CONFIG] + f"max_context_length = {tokens}\nauto_compact_threshold = {limit}\n"


def _stream(prompt: str, *session: str) -> list[str]:
    return ["vibe", "-p", prompt, "--output", "streaming", "--auto-approve", *session]


HARNESS = Harness(
    name="mistral-vibe",
    version="3.0.2",
    layer=Layer(install="pypi:mistral-vibe==3.0.2", base="trixie"),
    # Its session store is rewritten (snapshots, journal) on every call, a failed one too: kept and put back.
    history=lambda session: (f".vibe/logs/session/unified/{session}",) if session else (),
    # CURRENT: the pointer to the session's latest generation.
    transcript=TranscriptReader(patterns=(".vibe/logs/session/unified/*/CURRENT",), parse=_turns, read=_read_store),
    shell=("bash", "command"),
    first=lambda prompt, model: _stream(prompt),
    resume=lambda prompt, model, session: _stream(prompt, "--resume", session),
    env=lambda base, model: {"VIBE_HOME": ".vibe", "STAMINABENCH_KEY": "gateway"},
    files=lambda base, model: {
        _CONFIG: (
            f'active_model = "{model}"\nenable_telemetry = false\nenable_update_checks = false\n'
            "enable_auto_update = false\napi_retry_max_elapsed_time = 0\n\n"
            f'[[providers]]\nname = "staminabench"\napi_base = "{base}"\n'
            'api_key_env_var = "STAMINABENCH_KEY"\nbackend = "generic"\n\n[[models]]\n'
            f'name = "{model}"\nprovider = "staminabench"\nalias = "{model}"\n'
        )
    },
    parse=_parse,
    window=_window,
    caveat="Chat Completions with tool calls; its own API retries are off (they ran past 3 minutes on a 500); "
    "token usage is not printed, the gateway meters it",
)
