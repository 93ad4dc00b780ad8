"""Which requests the gateway forwards upstream with the real key: model inference, and nothing else.

A sandbox holds a base URL, not a key, but whatever the gateway forwards goes out with the real key: a
`DELETE files/...` or `POST fine_tuning/jobs` passed through would act on the account, unmetered and outside
the cost caps. So a request is forwarded only when its method and its path (after `/g/<token>/v1/`) are one of
the endpoints the three wire formats the gateway meters need:

- OpenAI chat completions: `POST chat/completions` (mini-swe-agent, aider, opencode, qwen, kimi, vibe)
- OpenAI Responses: `POST responses` (codex); not `GET`/`DELETE responses/<id>` (stored responses)
- Anthropic messages: `POST messages`, and `POST messages/count_tokens`, which Claude Code calls now and then
  (it generates nothing and costs nothing)
- `GET models` and `GET models/<id>`: read-only model listing, which OpenAI and Anthropic clients may ask
  for; one plain path segment as the id, so it reaches nothing beside the listing

A path is taken only in its one canonical spelling, never normalised: no `.` or `..` segment, no empty one
(doubled, leading or trailing slashes), no backslash, no percent-encoding at all, only plain URL characters;
the query string (Claude Code's `?beta=true`) only from plain characters too. Anything else is refused, so no
spelling an upstream or a proxy in front of it might decode or normalise can turn into another endpoint.
"""

from __future__ import annotations

import re

# Exact paths (after the version prefix) and the methods each is forwarded for.
ENDPOINTS: dict[str, frozenset[str]] = {
    "chat/completions": frozenset({"POST"}),
    "responses": frozenset({"POST"}),
    "messages": frozenset({"POST"}),
    "messages/count_tokens": frozenset({"POST"}),
    "models": frozenset({"GET"}),
}
_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")  # a segment of a fixed endpoint path
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]{0,199}")  # GET models/<id>: one segment, no slash
_QUERY = re.compile(r"[A-Za-z0-9._~=&,:-]{0,1000}")  # `beta=true`, `limit=20&after_id=x`, `client_version=0.1.2`

SUMMARY = "POST chat/completions, responses, messages, messages/count_tokens; GET models"


def upstream_target(method: str, rest: str) -> str | None:
    """The path (with its query) to forward `method /v1/<rest>` to, or None: it is not forwarded."""
    path, has_query, query = rest.partition("?")
    if has_query and not _QUERY.fullmatch(query):
        return None
    segments = path.split("/")
    if len(segments) == 2 and segments[0] == "models" and _MODEL_ID.fullmatch(segments[1]):
        allowed = method == "GET"
    elif all(_SEGMENT.fullmatch(s) for s in segments):
        allowed = method in ENDPOINTS.get(path, frozenset())
    else:
        allowed = False
    if not allowed:
        return None
    return f"{path}?{query}" if has_query else path


__all__ = ["ENDPOINTS", "SUMMARY", "upstream_target"]
