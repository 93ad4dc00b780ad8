"""mini-swe-agent, through staminabench's session driver (`staminad/agents/drivers/mini_driver.py`).

Its CLI cannot continue a conversation, so the driver keeps the agent's messages in HOME and resumes them on
every call; the driver's one JSON report line is what is parsed, and its session file is the transcript.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ._kit import Harness, Layer, Report, TranscriptReader, Turn, as_dict, as_int, chat_turn, json_lines


def _parse(out: str, err: str, code: int) -> Report:
    lines = [d for d in json_lines(out) if d.get("driver") == "staminabench-mini"]
    if not lines:
        return Report(ok=False, error=(err.strip().splitlines() or ["no report from the driver"])[-1])
    last = lines[-1]
    crashed = str(last.get("crashed") or "")
    return Report(
        session=str(last.get("session", "")),
        ok=not crashed,
        input_tokens=as_int(last.get("input_tokens")),
        output_tokens=as_int(last.get("output_tokens")),
        error=crashed or ("" if last.get("exit_status") == "Submitted" else str(last.get("exit_status"))),
    )


def _turns(text: str, cut: bool) -> Iterator[Turn]:
    """The driver's one JSON object; when only its tail was read, the whole messages found in that tail."""
    if cut:
        messages: object = list(_list_elements(text))
    else:
        try:
            messages = as_dict(json.loads(text)).get("messages")
        except ValueError:
            messages = None
    for message in messages if isinstance(messages, list) else []:
        item = chat_turn(message) if isinstance(message, dict) else None
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


def _window(model: str, tokens: int, limit: int, at: float, env: dict[str, str], files: dict[str, str]) -> None:
    """Our driver reads `STAMINA_MINI_CONTEXT_WINDOW` and compacts at `STAMINA_MINI_COMPACT_AT`."""
    env |= {"STAMINA_MINI_CONTEXT_WINDOW": str(tokens), "STAMINA_MINI_COMPACT_AT": str(at)}


HARNESS = Harness(
    name="mini-swe-agent",
    version="2.4.6",
    layer=Layer(
        install="pypi:mini-swe-agent==2.4.6 litellm==1.80.0",
        # What it needs at run time beyond itself (its full dependency list pulls in UIs and datasets).
        deps=(
            "pyyaml",
            "requests",
            "jinja2",
            "pydantic>=2",
            "tenacity",
            "rich",
            "python-dotenv",
            "platformdirs",
            "openai",
            "typer",
        ),
    ),
    first=lambda prompt, model: ["mini-driver", "--model", model, "--task", prompt],
    resume=lambda prompt, model, session: ["mini-driver", "--model", model, "--task", prompt],
    env=lambda base, model: {
        "OPENAI_API_BASE": base,
        "OPENAI_BASE_URL": base,
        "OPENAI_API_KEY": "gateway",
        "MSWEA_SILENT_STARTUP": "1",
        "MSWEA_COST_TRACKING": "ignore_errors",
        # The gateway waits out outages; the harness's own retries would only add to it.
        "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    },
    parse=_parse,
    history=lambda session: (".staminabench/mini",),  # the driver's whole session store, the first call's too
    transcript=TranscriptReader(patterns=(".staminabench/mini/session.json",), parse=_turns),
    shell=("bash", "command"),
    window=_window,
    caveat="its CLI cannot continue a conversation, so a small driver keeps the agent's messages in HOME and "
    "resumes them on every call",
)
