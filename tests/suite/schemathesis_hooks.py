"""schemathesis hooks for tests/suite/test_schemathesis.py: README rules that JSON Schema cannot state.

Loaded by `st run` through SCHEMATHESIS_HOOKS; the facts about each operation (integer fields,
reference fields, actions) come from a JSON file the test writes.

- [types] counts 5.0 as no integer while JSON Schema's `integer` admits it, so integral floats
  generated for integer fields are sent as integers (`map_case`); nothing else is changed.
- A rejected positive case is dropped (`filter_failure`) only when the server's own state proves the
  rejection right: a body `id` differing from the path's ([patch-id]), a reference naming an id the
  server answers 404 for ([reference]), an action on an entity whose enum field is outside the
  action's sources ([actions]). Every drop is logged with its rule, so the test can show them.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import schemathesis

with open(os.environ["STAMINABENCH_ST_FACTS"], encoding="utf-8") as _fh:
    _FACTS: dict[str, Any] = json.load(_fh)


def _facts(case: Any) -> dict[str, Any] | None:
    found: dict[str, Any] | None = _FACTS["operations"].get(f"{case.operation.method.upper()} {case.operation.path}")
    return found


def _get(path: str) -> tuple[int, Any]:
    """GET on the server under test (loopback, bounded)."""
    try:
        with urllib.request.urlopen(_FACTS["url"] + path, timeout=10) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, None


def _quoted(value: str) -> str:
    return urllib.parse.quote(value, safe="")


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    facts = _facts(case)
    if facts and isinstance(case.body, dict):
        for name in facts["integers"]:
            value = case.body.get(name)
            if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
                case.body[name] = int(value)
    return case


def _reason(case: Any, status: int) -> str | None:
    facts = _facts(case)
    if facts is None:
        return None
    body = case.body if isinstance(case.body, dict) else {}
    action = facts["action"]
    if action is not None:
        code, stored = _get(f"/{action['endpoint']}/{_quoted(str(case.path_parameters.get('id')))}")
        if (
            status == 400
            and code == 200
            and isinstance(stored, dict)
            and stored.get(action["field"]) not in action["sources"]
        ):
            return "[actions]: the stored entity is in the wrong state, which no request chooses"
        return None
    if status not in (400, 422):
        return None
    if (
        case.operation.method.upper() == "PATCH"
        and isinstance(body.get("id"), str)
        and body["id"] != case.path_parameters.get("id")
    ):
        return "[patch-id]: a body id must equal the path's id, a relation JSON Schema cannot state"
    for name, target in facts["references"].items():
        value = body.get(name)
        ids = value if isinstance(value, list) else [value] if isinstance(value, str) else []
        if any(isinstance(i, str) and _get(f"/{target}/{_quoted(i)}")[0] == 404 for i in ids):
            return "[reference]: the body names an entity the server does not store"
    return None


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    if failure.code != "ST202":  # "Schema-valid request rejected"; every other failure stands
        return True
    reason = _reason(case, response.status_code)
    if reason is None:
        return True
    with open(_FACTS["log"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"operation": case.operation.label, "reason": reason}) + "\n")
    return False
