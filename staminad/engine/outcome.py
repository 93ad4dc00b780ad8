"""One taxonomy for how an attempt ended: a pass, an agent failure (suite categories) or an infra kind.

Infra kinds never consume the retry budget R and are never scored as agent failures.
"""

from __future__ import annotations

import signal
from typing import Literal

InfraKind = Literal["harness_crash", "self_kill", "harness_killed", "stuck", "server_never_ready",
                    "sandbox_lost", "llm_unavailable"]
INFRA_KINDS: tuple[str, ...] = InfraKind.__args__  # type: ignore[attr-defined]


def classify_harness(exit_code: int | None, sig: int | None, killed_by_engine: bool) -> InfraKind | None:
    """None when the harness ended normally; else why it is an infrastructure failure."""
    if killed_by_engine:
        return "stuck"
    if sig is not None:
        # A broad `pkill -f` sends SIGTERM by default: the agent killed its own harness.
        return "self_kill" if sig == signal.SIGTERM else "harness_killed"
    if exit_code is None:
        return "harness_crash"
    return None if exit_code == 0 else "harness_crash"
