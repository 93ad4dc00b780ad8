"""Whose fault an attempt's end was, beyond the suite: the infra budget per side, and the feedback an
agent gets when its server did not start.

The harness failing and the platform failing are retried separately, each up to the sweep's
`infra_retries` (plus an operator's grant): a flaky engine never uses up the retries a crashing
harness is entitled to, and the verdict says which side ran out (see `engine.outcome`).
"""

from __future__ import annotations

from collections.abc import Sequence

from protocol.kinds import ServerKind
from staminad.engine.outcome import is_platform
from staminad.engine.unavailable import hints
from staminad.suite.feedback import FeedbackLevel
from state.store import AttemptRow

_OPENING = "Your server could not be tested: it did not start and answer requests."
_CLOSING = (
    "When you are done, `bash run_server.sh <port>` must start the server in the foreground, listening on "
    "that port, and it must answer every request with a complete HTTP response."
)


def infra_tries(rows: Sequence[AttemptRow], turn: int, attempt: int, platform: bool) -> int:
    """How many infra failures of one side the agent call (turn, attempt) has had."""
    return sum(
        1
        for r in rows
        if r.turn == turn and r.attempt == attempt and r.outcome == "infra" and is_platform(r.infra_kind) == platform
    )


def server_feedback(kind: ServerKind, message: str, log: str, level: FeedbackLevel) -> str:
    """The retry prompt when the server failed to start (`kind`: how it failed)."""
    lines = [_OPENING, ""]
    if level == "minimal":
        lines.append("At least one test failed. No further details are available.")
    else:
        lines.append(f"What happened ({kind}): {message.rstrip('.')}.")
        lines += [f"- {hint}" for hint in hints(log)]  # what it needs that the sandbox lacks, said plainly
        if level == "detailed" and log.strip():
            lines += ["", "The end of the server's output:", "```", log.rstrip()[-2000:], "```"]
    lines += ["", _CLOSING, ""]
    return "\n".join(lines)
