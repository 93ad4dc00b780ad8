"""One taxonomy for how an attempt ended, and whose fault it was.

- a pass;
- an agent failure: the suite's categories, or a server that did not start or answer (`protocol.kinds.ServerKind`);
  these are the agent's code failing its tests, so they consume the retry budget R and are scored;
- an infrastructure failure, retried without touching R (the paper's infra retries), of two sides:
  `HARNESS_KINDS`, the harness process failing (crash, self-kill, stuck): when the retries run out
  the scenario ends and is scored with the turns it passed, as in the paper (`context_exhausted`, a
  harness that failed after its model refused a context over its window, ends it at once: the same
  context cannot fit on a retry; the paper's long-horizon failure); and `PLATFORM_KINDS`,
  faults of the benchmark's own machinery (a lost container, an engine error, a port held from
  outside the sandbox, a model endpoint outage, a bug in our own code): never scored against the
  agent, and re-runnable.
"""

from __future__ import annotations

import signal

from protocol.kinds import HARNESS_KINDS, INFRA_KINDS, PLATFORM_KINDS, HarnessKind, InfraKind, PlatformKind

# Harness kinds a retry cannot help: the scenario ends at once, scored with the turns it passed.
FINAL_KINDS: tuple[InfraKind, ...] = ("context_exhausted",)


def is_platform(kind: str | None) -> bool:
    """Whether an infra kind is the platform's fault (unscored, re-runnable) rather than the harness's."""
    return kind in PLATFORM_KINDS


def platform_ended(status: str, end_kind: str | None) -> bool:
    """Whether a scenario was ended by a platform fault (or an infra end with no kind recorded): not the agent's
    result, left out of every score and re-runnable. `end_kind` is its last attempt's infra kind."""
    return status == "infra_failed" and (end_kind is None or is_platform(end_kind))


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


__all__ = [
    "FINAL_KINDS",
    "HARNESS_KINDS",
    "INFRA_KINDS",
    "PLATFORM_KINDS",
    "HarnessKind",
    "InfraKind",
    "PlatformKind",
    "classify_harness",
    "is_platform",
    "platform_ended",
]
