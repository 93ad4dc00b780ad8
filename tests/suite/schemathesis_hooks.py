"""schemathesis hooks for tests/suite/test_schemathesis.py: drop only failures a README rule explains.

Loaded by `st run` through SCHEMATHESIS_HOOKS. A positive case (valid by the export's JSON Schema)
that the reference server rejects is dropped only when a rule JSON Schema cannot state makes the
rejection right, and every drop is appended to a log with its rule, so the test can show them.
The facts about each operation (integer and reference fields) come from a JSON file the test writes.
"""

from __future__ import annotations

import json
import os
from typing import Any

import schemathesis

with open(os.environ["STAMINABENCH_ST_FACTS"], encoding="utf-8") as _fh:
    _FACTS: dict[str, Any] = json.load(_fh)


def _reason(case: Any, status: int) -> str | None:
    op = _FACTS["operations"].get(f"{case.operation.method.upper()} {case.operation.path}")
    if op is None:
        return None
    body = case.body if isinstance(case.body, dict) else {}
    if op["action"] and status == 400:
        return "[actions]: 400 says the stored entity is in the wrong state, which no request chooses"
    if status not in (400, 422):
        return None
    if any(isinstance(body.get(k), float) and body[k].is_integer() for k in op["integers"]):
        return ("[types]: an integer is written without a fraction; JSON Schema's integer also admits 5.0, "
                "which the README rejects")
    if case.operation.method.upper() == "PATCH" and "id" in body and body["id"] != case.path_parameters.get("id"):
        return "[patch-id]: a body id must equal the path's id, a relation JSON Schema cannot state"
    if any(body.get(k) not in (None, []) for k in op["references"]):
        return "[reference]: a reference must name a stored entity, which JSON Schema cannot state"
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
