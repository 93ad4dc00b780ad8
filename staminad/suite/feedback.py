"""desc_feedback: a suite result rendered for the agent at one of three levels of detail.

`detailed` lists each failing test with the rule it checks, the request and what came back, failures that share
one cause (the same step failing the same way: a `POST /reset` answering 404 fails every test at its setup) as
one entry naming the tests, so the agent reads causes, not one cause many times;
`medium` lists failing test names and the count; `minimal` only says that something failed.
Output is deterministic and bounded, so a suite with thousands of failures still yields a prompt
an agent can read.
"""

from __future__ import annotations

from typing import Literal

from staminad.suite.runner import SuiteResult, TestResult

FeedbackLevel = Literal["detailed", "medium", "minimal"]
LEVELS: tuple[str, ...] = ("detailed", "medium", "minimal")
MAX_DETAILED = 15
MAX_NAMES = 40
MAX_GROUP_NAMES = 8  # tests named as examples of one shared cause

_OPENING = "The automated tests found problems with your server."
_CLOSING = (
    "Problems can come from code that is only indirectly related to a failing test, so review your "
    "changes carefully. Re-read README.md; validate every input; make sure `run_server.sh` installs or "
    "loads everything the server needs. When you are done, `bash run_server.sh <port>` must start the "
    "server."
)


def render_feedback(result: SuiteResult, level: FeedbackLevel) -> str:
    """The retry prompt for a failed suite."""
    failures = result.failures
    lines = [_OPENING, ""]
    if level == "minimal" or not failures:
        lines.append("At least one test failed. No further details are available.")
    elif level == "medium":
        lines.append(f"{len(failures)} of {len(result.results)} tests failed:")
        lines += [f"- {f.name}" for f in failures[:MAX_NAMES]]
        if len(failures) > MAX_NAMES:
            lines.append(f"- ... and {len(failures) - MAX_NAMES} more")
    else:
        lines.append(f"{len(failures)} of {len(result.results)} tests failed.")
        if result.server_died:
            lines.append("The server stopped responding during the tests; the tests after that point did not run.")
        lines.append("")
        groups = _by_cause(failures)
        for group in groups[:MAX_DETAILED]:
            f = group[0]
            if len(group) == 1:
                lines.append(f"- {f.name} (README rule [{f.rule}]): {f.message}")
            else:
                lines.append(_group_line(group))
            if f.request:
                lines.append(f"  request: {f.request}")
            if f.status is not None:
                lines.append(f"  response: {f.status} {f.response}")
        if len(groups) > MAX_DETAILED:
            rest = [f for group in groups[MAX_DETAILED:] for f in group]
            names = ", ".join(f.name for f in rest[:MAX_NAMES])
            more = f" and {len(rest) - MAX_NAMES} more" if len(rest) > MAX_NAMES else ""
            lines.append(f"- also failed: {names}{more}")
    lines += ["", _CLOSING, ""]
    return "\n".join(lines)


def _by_cause(failures: list[TestResult]) -> list[list[TestResult]]:
    """Failures grouped by cause (the same category, message and status: one step failing the same way), each
    group in test order, groups in the order their first test failed."""
    groups: dict[tuple[str, str, int | None], list[TestResult]] = {}
    for f in failures:
        groups.setdefault((f.category, f.message, f.status), []).append(f)
    return list(groups.values())


def _group_line(group: list[TestResult]) -> str:
    """One entry for tests failing of one cause: where (the setup step, or the same step), why, which tests."""
    first = group[0]
    if first.step < 0 and first.request:  # the reset every test starts with
        where = f"at their setup step `{' '.join(first.request.split()[:2])}`"
    else:
        where = "the same way" if first.request else ""  # not run at all: the message says why
    rules = sorted({f.rule for f in group})
    ruled = f"README rule{'s' if len(rules) > 1 else ''} " + ", ".join(f"[{r}]" for r in rules[:MAX_GROUP_NAMES])
    ruled += f" and {len(rules) - MAX_GROUP_NAMES} more" if len(rules) > MAX_GROUP_NAMES else ""
    names = ", ".join(f.name for f in group[:MAX_GROUP_NAMES])
    more = f" and {len(group) - MAX_GROUP_NAMES} more" if len(group) > MAX_GROUP_NAMES else ""
    head = f"{len(group)} tests failed {where}" if where else f"{len(group)} tests"
    return f"- {head} ({ruled}): {first.message} - {'e.g. ' if more else ''}{names}{more}"
