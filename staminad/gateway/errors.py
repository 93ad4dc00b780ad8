"""What an upstream error says: the model's context ran out, or the provider failed (a verdict, not a guess).

A context-length refusal is the agent's long-horizon failure, not an outage: it is a 400 (413 from some
proxies) whose body says so in one of the wordings the providers use:

- OpenAI: `"code": "context_length_exceeded"`, "This model's maximum context length is N tokens", and for
  the Responses API "Your input exceeds the context window of this model"
- Anthropic: `invalid_request_error` with "prompt is too long: N tokens > M maximum", or "input length and
  `max_tokens` exceed context limit"
- vLLM: "This model's maximum context length is N tokens. However, you requested M tokens", and "... is
  longer than the maximum model length of N"
- SGLang: "The input (N tokens) is longer than the model's context length (M tokens)", "Requested token
  count exceeds the model's maximum context length"

Inside a 200 stream a provider may still fail: Anthropic's `event: error` (`overloaded_error`, `api_error`),
the Responses API's `response.failed` (or a bare `error` event), an OpenAI-compatible server's
`data: {"error": ...}` chunk. Those are outages (or, with a context code, the context ran out).
"""

from __future__ import annotations

import json
import re
from typing import Any

CONTEXT_STATUSES = frozenset((400, 413))
_CONTEXT = re.compile(
    r"context_length_exceeded|maximum context length|context window|context length|exceeds? context limit"
    r"|prompt is too long|input is too long|maximum model length|too many (input )?tokens",
    re.IGNORECASE,
)


def message_of(error: Any) -> str:
    """A provider error object's words (code, type and message), short; '' when there are none."""
    if isinstance(error, str):
        return error[:500]
    if not isinstance(error, dict):
        return ""
    if isinstance(error.get("error"), dict | str):  # the envelope {"error": {...}} or {"type": "error", ...}
        return message_of(error["error"])
    parts = [str(error[k]) for k in ("code", "type", "message") if isinstance(error.get(k), str | int) and error[k]]
    return ": ".join(parts)[:500]


def is_context_error(words: str) -> bool:
    return bool(_CONTEXT.search(words))


def context_refusal(status: int, body: bytes) -> str:
    """Why a whole answer says the request's context is over the model's window ('' when it does not)."""
    if status not in CONTEXT_STATUSES:
        return ""
    try:
        data = json.loads(body)
    except ValueError:
        words = body[:2000].decode("utf-8", "replace")
    else:
        words = message_of(data) or body[:2000].decode("utf-8", "replace")
    return words if is_context_error(words) else ""


def stream_error(api: str, event: dict[str, Any]) -> str:
    """The provider's error carried by one event of a 200 stream ('' for an ordinary event)."""
    kind = event.get("type")
    if kind == "error" or (api == "chat" and "error" in event):
        return message_of(event) or "error event"
    if kind == "response.failed":
        response = event.get("response")
        error = response.get("error") if isinstance(response, dict) else None
        return message_of(error) or "response.failed"
    return ""


__all__ = ["CONTEXT_STATUSES", "context_refusal", "is_context_error", "message_of", "stream_error"]
