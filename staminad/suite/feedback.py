"""desc_feedback: a suite result rendered for the agent at one of three levels of detail.

`detailed` lists each failing test with the rule it checks, the request and what came back;
`medium` lists failing test names and the count; `minimal` only says that something failed.
Output is deterministic and bounded, so a suite with thousands of failures still yields a prompt
an agent can read.
"""

from __future__ import annotations

from typing import Literal

from staminad.suite.runner import SuiteResult

FeedbackLevel = Literal["detailed", "medium", "minimal"]
LEVELS: tuple[str, ...] = ("detailed", "medium", "minimal")
MAX_DETAILED = 15
MAX_NAMES = 40

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
        for f in failures[:MAX_DETAILED]:
            lines.append(f"- {f.name} (README rule [{f.rule}]): {f.message}")
            if f.request:
                lines.append(f"  request: {f.request}")
            if f.status is not None:
                lines.append(f"  response: {f.status} {f.response}")
        if len(failures) > MAX_DETAILED:
            rest = failures[MAX_DETAILED:]
            names = ", ".join(f.name for f in rest[:MAX_NAMES])
            more = f" and {len(rest) - MAX_NAMES} more" if len(rest) > MAX_NAMES else ""
            lines.append(f"- also failed: {names}{more}")
    lines += ["", _CLOSING, ""]
    return "\n".join(lines)
