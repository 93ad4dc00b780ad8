"""The agent's transcript: a short list of turns read from the session file a real harness leaves in HOME.

Each harness declares where its session or trajectory file lives (`Harness.transcript`, HOME-relative glob
patterns; HOME is `<workspace>/.home`), and this module knows how to read each kind. The read is bounded
whatever the agent made of the file: only the newest matching regular file, only its last READ_LIMIT bytes,
only the last MAX_ITEMS items, each cut to TEXT_LIMIT characters. Parsing is lenient: a torn last line, a
record of a kind not known here or one of an unexpected shape is skipped, never an error.

Formats, as the pinned versions write them (see `tests/agents/recordings/README.md` for the captures):
Claude Code's project JSONL (`type` user/assistant records around an Anthropic `message`), Codex's rollout
JSONL (`response_item` records around Responses API items), Kimi CLI's `context.jsonl` (one chat message a
line; `_`-prefixed roles are its bookkeeping), mini-swe-agent's session file kept by our driver (one JSON
object whose `messages` are chat messages), Mistral Vibe's session store (its latest generation's
context messages, read from the chunk files its manifest lists, within the same byte bound), and
OpenHands' conversation (one JSON file per event, the last of them within the same byte bound).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from protocol.messages import TranscriptItem
from staminad.agents.harnesses import HARNESSES
from staminad.sandbox.beneath import WalkBudget, glob
from staminad.sandbox.bounded import bounded_tail

READ_LIMIT = 256 * 1024  # bytes read from the end of a session file
MAX_ITEMS = 40  # items kept, the latest
TEXT_LIMIT = 2000  # characters kept of an item's text


class Transcript(msgspec.Struct, frozen=True, kw_only=True):
    path: str  # the file read
    items: tuple[TranscriptItem, ...]
    cut: bool  # True when the file was larger than what was read


GLOB_ENTRIES = 20_000  # directory entries looked at per pattern (an agent can make HOME as large as it likes)
GLOB_SECONDS = 5.0


def newest(home: Path, patterns: Iterable[str]) -> Path | None:
    """The most recently written regular file matching any pattern under `home`, found without following a link at
    any component, `home` itself included (it is `<workspace>/.home`: the agent's; the workspace is the root)."""
    best: tuple[float, Path] | None = None
    for pattern in patterns:
        budget = WalkBudget(GLOB_ENTRIES, GLOB_SECONDS)
        try:
            found = glob(home.parent, f"{home.name}/{pattern}", budget)
        except OSError:
            continue
        for rel, st in found:
            if best is None or st.st_mtime > best[0]:
                best = (st.st_mtime, home.parent / rel)
    return None if best is None else best[1]


def read_transcript(home: Path, harness: str) -> Transcript | None:
    """The transcript the harness left under `home`, or None (no such harness, parser or file)."""
    h, parse = HARNESSES.get(harness), PARSERS.get(harness)
    if h is None or parse is None:
        return None
    path = newest(home, h.transcript)
    if path is None:
        return None
    read = READERS.get(harness, _tail)(home.parent, path)
    if read is None:
        return None
    text, cut = read
    items = [_bounded(i) for i in parse(text, cut) if i.text or i.tools]
    return Transcript(path=str(path), items=tuple(items[-MAX_ITEMS:]), cut=cut)


def _tail(root: Path, path: Path) -> tuple[str, bool] | None:
    """The file's last READ_LIMIT bytes (from a whole line when cut), and whether it was cut; `path` is read beneath
    `root` without following links."""
    tail = bounded_tail(path, READ_LIMIT, beneath=root)
    return None if tail is None else (tail.text, tail.cut)


def _bounded(item: TranscriptItem) -> TranscriptItem:
    text = item.text if len(item.text) <= TEXT_LIMIT else item.text[:TEXT_LIMIT] + " …"
    return msgspec.structs.replace(item, text=text, tools=item.tools[:20])


def _records(text: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines text; a line that does not parse (a torn last one) is skipped."""
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _texts(content: object, kinds: tuple[str, ...] = ("text",)) -> str:
    """The text of a message's content: a string, or the `text` of its parts of the given kinds."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        _str(part.get("text")) for part in content if isinstance(part, dict) and part.get("type") in kinds
    ).strip()


def _item(role: object, text: str, tools: Iterable[str] = ()) -> TranscriptItem:
    return TranscriptItem(role=_str(role) or "?", text=text.strip(), tools=tuple(t for t in tools if t))


# --- Claude Code: ~/.claude/projects/<project>/<session>.jsonl -------------------------------------


def _claude(text: str, cut: bool) -> Iterator[TranscriptItem]:
    for record in _records(text):
        message = record.get("message")
        if record.get("type") not in ("user", "assistant") or not isinstance(message, dict):
            continue  # summaries, system and result records, file snapshots
        content = message.get("content")
        if isinstance(content, str):
            yield _item(message.get("role"), content)
            continue
        if not isinstance(content, list):
            continue
        parts = [p for p in content if isinstance(p, dict)]
        results = [p for p in parts if p.get("type") == "tool_result"]
        if results:  # the harness answering the model's tool calls
            yield _item("tool", "\n".join(_texts(p.get("content")) for p in results))
            continue
        tools = [_str(p.get("name")) for p in parts if p.get("type") == "tool_use"]
        yield _item(message.get("role"), _texts(parts), tools)


# --- Codex: $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl -----------------------------

_CODEX_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_CODEX_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _codex(text: str, cut: bool) -> Iterator[TranscriptItem]:
    for record in _records(text):
        item = record.get("payload")
        if record.get("type") != "response_item" or not isinstance(item, dict):
            continue  # session_meta, turn_context, event_msg (the same turns again, as UI events)
        kind = item.get("type")
        if kind == "message":
            yield _item(item.get("role"), _texts(item.get("content"), ("input_text", "output_text", "text")))
        elif kind in _CODEX_CALLS:
            yield _item("assistant", "", [_str(item.get("name")) or "shell"])
        elif kind in _CODEX_OUTPUTS:
            output = item.get("output")
            yield _item("tool", output if isinstance(output, str) else _str(_dict(output).get("content")))


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# --- chat messages: Kimi CLI's context.jsonl, mini-swe-agent's session ---------------------------


def _chat(message: dict[str, Any]) -> TranscriptItem | None:
    role = message.get("role")
    if not isinstance(role, str) or role.startswith("_") or role == "exit":
        return None  # Kimi's checkpoints, usage and system prompt records; mini's end-of-call marker
    calls = message.get("tool_calls")
    tools = [_str(_dict(_dict(c).get("function")).get("name")) for c in calls] if isinstance(calls, list) else []
    return _item(role, _texts(message.get("content")), tools)


def _kimi(text: str, cut: bool) -> Iterator[TranscriptItem]:
    for record in _records(text):
        item = _chat(record)
        if item is not None:
            yield item


def _mini(text: str, cut: bool) -> Iterator[TranscriptItem]:
    """The driver's one JSON object; when only its tail was read, the whole messages found in that tail."""
    if cut:
        messages: object = list(_list_elements(text))
    else:
        try:
            messages = _dict(json.loads(text)).get("messages")
        except ValueError:
            messages = None
    for message in messages if isinstance(messages, list) else []:
        item = _chat(message) if isinstance(message, dict) else None
        if item is not None:
            yield item


def _list_elements(text: str) -> Iterator[dict[str, Any]]:
    """Whole objects with a `role` in the tail of a JSON list written by `json.dumps` (elements joined by
    `, `): each one found starts after a `, ` and is followed by the next element or the list's end."""
    decoder = json.JSONDecoder()
    after = 0
    for match in re.finditer(r", \{\"", text):
        start = match.start() + 2
        if start < after:
            continue  # inside an element already read
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("role"), str) and text[end : end + 2] in (", ", "]", "]}"):
            after = end
            yield value


# --- Mistral Vibe: ~/.vibe/logs/session/unified/<session>/, a store of generations -------------------
#
# CURRENT names the latest generation; its manifest.json lists, in order, the content-named chunk files
# (chunks/<sha256>.json, each a JSON list) whose concatenation is the checkpoint's context messages
# (`{"message": {"role", "content": [text | tool_call parts]}}`). Changes since that generation sit in a
# journal that is not read: the transcript is the session as of its latest fold (the end of each call).

_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_GENERATION = re.compile(r"^[0-9]{16}$")
POINTER_LIMIT = 64 * 1024  # bytes of CURRENT or a manifest read (they are small; a larger one is not read)


def _small_json(root: Path, path: Path) -> Any:
    tail = bounded_tail(path, POINTER_LIMIT, beneath=root)
    if tail is None or tail.cut:
        return None
    try:
        return json.loads(tail.text)
    except ValueError:
        return None


def _vibe_store(root: Path, current: Path) -> tuple[str, bool] | None:
    """The latest generation's context messages, one a line, from its last chunks up to READ_LIMIT bytes."""
    store = current.parent
    generation = _str(_dict(_small_json(root, current)).get("generation"))
    if not _GENERATION.match(generation):
        return None
    chunks = _dict(_dict(_small_json(root, store / "generations" / generation / "manifest.json")).get("checkpoint"))
    digests = [d for d in chunks.get("chunks") or [] if isinstance(d, str) and _DIGEST.match(d)]
    lines: list[str] = []
    budget, cut = READ_LIMIT, False
    for digest in reversed(digests):
        tail = bounded_tail(store / "chunks" / f"{digest}.json", budget, beneath=root) if budget > 0 else None
        if tail is None or tail.cut:
            cut = True  # out of budget (or a chunk gone): the earlier messages are left out
            break
        budget -= len(tail.text.encode())
        try:
            entries = json.loads(tail.text)
        except ValueError:
            cut = True
            break
        lines[:0] = [json.dumps(e) for e in entries] if isinstance(entries, list) else []
    return "\n".join(lines), cut


def _vibe(text: str, cut: bool) -> Iterator[TranscriptItem]:
    for record in _records(text):
        message = _dict(record.get("message"))
        parts = message.get("content")
        calls = (
            [_str(p.get("name")) for p in parts if isinstance(p, dict) and p.get("type") == "tool_call"]
            if (isinstance(parts, list))
            else []
        )
        if message.get("role"):
            yield _item(message.get("role"), _texts(parts), calls)


# --- OpenHands: ~/.openhands/conversations/<conversation>/events/event-NNNNN-<id>.json, one event a file --
#
# The newest event file names the conversation; its events are read back from the last, whole files only,
# within READ_LIMIT bytes: messages (`llm_message`), tool calls (`tool_name`, the `thought` before them) and
# their observations (the tool's `content`). Its conversation-state and error events carry no turn.

EVENT_FILES = 5000  # event files of one conversation looked at (its directory is the agent's)


def _openhands_events(root: Path, newest_event: Path) -> tuple[str, bool] | None:
    """The conversation's events, one a line, from its last event files up to READ_LIMIT bytes."""
    events = newest_event.parent
    try:
        found = glob(root, f"{events.relative_to(root)}/event-*.json", WalkBudget(EVENT_FILES, GLOB_SECONDS))
    except (OSError, ValueError):
        return None
    lines: list[str] = []
    budget, cut = READ_LIMIT, False
    for rel, _ in sorted(found, key=lambda f: f[0].rsplit("/", 1)[-1], reverse=True):
        tail = bounded_tail(root / rel, budget, beneath=root) if budget > 0 else None
        if tail is None or tail.cut:
            cut = True  # out of budget (or the file gone): the earlier events are left out
            break
        budget -= len(tail.text.encode())
        lines.insert(0, " ".join(tail.text.split("\n")))
    return "\n".join(lines), cut


_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # its terminal tool's output keeps the shell's escape sequences


def _openhands(text: str, cut: bool) -> Iterator[TranscriptItem]:
    for event in _records(text):
        message = _dict(event.get("llm_message"))
        if message:
            yield _item(message.get("role"), _texts(message.get("content")))
        elif event.get("tool_name") and "action" in event:
            yield _item("assistant", _texts(event.get("thought")), [_str(event["tool_name"])])
        elif event.get("tool_name") and "observation" in event:
            yield _item("tool", _CSI.sub("", _texts(_dict(event.get("observation")).get("content"))))


PARSERS: dict[str, Callable[[str, bool], Iterable[TranscriptItem]]] = {
    "claude-code": _claude,
    "codex": _codex,
    "kimi-cli": _kimi,
    "mini-swe-agent": _mini,
    "mistral-vibe": _vibe,
    "openhands": _openhands,
}
# How a harness's transcript file is read, where it is not the tail of that one file.
READERS: dict[str, Callable[[Path, Path], tuple[str, bool] | None]] = {
    "mistral-vibe": _vibe_store,
    "openhands": _openhands_events,
}

__all__ = ["MAX_ITEMS", "PARSERS", "READERS", "READ_LIMIT", "TEXT_LIMIT", "Transcript", "newest", "read_transcript"]
