"""OpenHands, headless (`--headless --json`), on trixie's Python 3.13 (see `staminad.sandbox.docker.wheelset`).

Its CLI wheel declares Python ==3.12.*, which no base ships: that ceiling alone is ignored, and the layer
installs the versions the release's own lock names (`staminad/sandbox/docker/locks/openhands.json`). Its
conversation (one JSON file per event) is the transcript.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from ._kit import Files, Harness, Layer, Report, TranscriptReader, Turn, as_dict, as_str, json_lines, texts, turn

_EVENT = "--JSON Event--"  # `--json` prints each event as indented JSON after this line
_ID = re.compile(r"Conversation ID: ([0-9a-f]{32})")


def _events(out: str) -> list[dict[str, object]]:
    """The events `--headless --json` printed (a torn or foreign block is skipped)."""
    events = []
    for block in out.split(_EVENT)[1:]:
        try:
            value, _ = json.JSONDecoder().raw_decode(block.lstrip())
        except ValueError:
            continue
        if isinstance(value, dict):
            events.append(value)
    return events


def _parse(out: str, err: str, code: int) -> Report:
    # No token usage is printed (the gateway meters). A failed run still exits 0 after "Goodbye!": its
    # ConversationErrorEvent (the LLM call failed, the iteration limit hit) tells, and a run must end on the
    # agent's own word (its finish action or a message without tool calls).
    events = _events(out)
    found = _ID.findall(out)
    failed = [e for e in events if e.get("kind") == "ConversationErrorEvent"]
    agent = [e for e in events if e.get("source") == "agent"]
    finished = bool(agent) and (
        agent[-1].get("kind") == "MessageEvent" or as_dict(agent[-1].get("action")).get("kind") == "FinishAction"
    )
    if failed:
        error = f"{failed[-1].get('code')}: {failed[-1].get('detail')}"[:300]
    elif not finished:
        error = (err.strip().splitlines() or [f"exit {code} before the agent finished"])[-1]
    else:
        error = "" if code == 0 else f"exit {code}"
    return Report(session=found[-1] if found else "", ok=not error, error=error)


# ~/.openhands/conversations/<conversation>/events/event-NNNNN-<id>.json, one event a file. The newest event
# file names the conversation; its events are read back from the last, whole files only, within the byte
# budget: messages (`llm_message`), tool calls (`tool_name`, the `thought` before them) and their
# observations (the tool's `content`). Its conversation-state and error events carry no turn.

EVENT_FILES = 5000  # event files of one conversation looked at (its directory is the agent's)


def _read_events(files: Files, newest_event: Path, limit: int) -> tuple[str, bool] | None:
    """The conversation's events, one a line, from its last event files up to `limit` bytes."""
    events = newest_event.parent
    try:
        found = files.glob(f"{events.relative_to(files.root)}/event-*.json", EVENT_FILES)
    except (OSError, ValueError):
        return None
    lines: list[str] = []
    budget, cut = limit, False
    for rel in sorted(found, key=lambda f: f.rsplit("/", 1)[-1], reverse=True):
        tail = files.tail(files.root / rel, budget) if budget > 0 else None
        if tail is None or tail[1]:
            cut = True  # out of budget (or the file gone): the earlier events are left out
            break
        budget -= len(tail[0].encode())
        lines.insert(0, " ".join(tail[0].split("\n")))
    return "\n".join(lines), cut


_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # its terminal tool's output keeps the shell's escape sequences


def _turns(text: str, cut: bool) -> Iterator[Turn]:
    for event in json_lines(text):
        message = as_dict(event.get("llm_message"))
        if message:
            yield turn(message.get("role"), texts(message.get("content")))
        elif event.get("tool_name") and "action" in event:
            yield turn("assistant", texts(event.get("thought")), [as_str(event["tool_name"])])
        elif event.get("tool_name") and "observation" in event:
            yield turn("tool", _CSI.sub("", texts(as_dict(event.get("observation")).get("content"))))


_FLAGS = ["--headless", "--json", "--always-approve", "--override-with-envs"]
HARNESS = Harness(
    # The paper's version; the CLI's own wheel asks for Python 3.12 exactly (see staminad.sandbox.docker.wheelset).
    name="openhands",
    version="1.12.1",
    layer=Layer(
        install="pypi:openhands==1.12.1",
        base="trixie",
        sdists=("func-timeout==4.3.5",),
        ceiling=("openhands-", "==3.12.*"),
    ),
    first=lambda prompt, model: ["openhands", *_FLAGS, "-t", prompt],
    resume=lambda prompt, model, session: ["openhands", *_FLAGS, "--resume", session, "-t", prompt],
    # Read only with --override-with-envs (else the settings in HOME, which a sandbox has none of); litellm
    # would otherwise fetch its price list from the internet on start-up.
    env=lambda base, model: {
        "LLM_BASE_URL": base,
        "LLM_API_KEY": "gateway",
        "LLM_MODEL": f"openai/{model}",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    },
    parse=_parse,
    transcript=TranscriptReader(
        patterns=(".openhands/conversations/*/events/event-*.json",), parse=_turns, read=_read_events
    ),
    caveat="its CLI wheel declares Python ==3.12.*, which no base ships: it runs on trixie's 3.13 with that "
    "ceiling alone ignored (its SDK and tools ask >=3.12); a failed run exits 0, so success is read from its "
    "events; token usage is not printed, the gateway meters it",
)
