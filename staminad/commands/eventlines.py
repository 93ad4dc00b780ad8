"""`staminad logs` in its human mode: one readable line per event, time first, then the sweep and what happened.

The kinds `staminad run` prints read as it prints them (`progress.Progress.line`); the others get a line
of their own here. `--json` is the machine-readable form.
"""

from __future__ import annotations

import time

from protocol import Event
from protocol.events import (
    AttemptStarted,
    HarnessDone,
    LlmCall,
    LlmCapped,
    LlmUnavailable,
    LlmWait,
    SuiteStarted,
    SweepFailed,
    SweepFinished,
    SweepRuntime,
    event_cost,
)
from staminad.commands.progress import Progress


def event_line(event: Event) -> str:
    """`HH:MM:SS sweep: what happened` for one event."""
    return f"{time.strftime('%H:%M:%S', time.localtime(event.at))} {event.sweep}: {describe_event(event)}"


def describe_event(event: Event) -> str:
    line = Progress.line(event.data)
    if line is not None:
        return line
    match event.data:
        case SweepRuntime(runtime=runtime):
            return f"runs on {runtime}"
        case SweepFinished():
            return "sweep finished"
        case SweepFailed(error=error):
            return f"sweep failed: {error}"
        case AttemptStarted() as d:
            again = " (taken up again after a restart)" if d.resumed else ""
            return f"{d.configuration} seed {d.seed} turn {d.turn} attempt {d.attempt}: started{again}"
        case HarnessDone() as d:
            how = (
                f"signal {d.signal}"
                if d.signal is not None
                else f"exit {d.exit}"
                if d.exit is not None
                else "no status"
            )
            took = f" after {d.harness_seconds:.1f}s" if d.harness_seconds is not None else ""
            return f"{d.configuration} seed {d.seed} turn {d.turn} attempt {d.attempt}: harness ended ({how}){took}"
        case SuiteStarted() as d:
            return (
                f"{d.configuration} seed {d.seed} turn {d.turn} attempt {d.attempt}: server up in "
                f"{d.server_seconds:.1f}s, suite running"
            )
        case LlmCall() as d:
            return (
                f"scenario {d.scenario} turn {d.turn}: model call {d.model} -> {d.status}, {d.input:,} tokens in "
                f"({d.cached:,} cached), {d.output:,} out, {event_cost(d)}"
            )
        case LlmWait() as d:
            return (
                f"scenario {d.scenario} turn {d.turn}: {d.reason}; waiting {d.wait_seconds:.1f}s "
                f"({d.waited:.1f}s so far)"
            )
        case LlmUnavailable() as d:
            return f"scenario {d.scenario} turn {d.turn}: model unavailable: {d.reason}"
        case LlmCapped() as d:
            return f"scenario {d.scenario}: capped: {d.reason}"
        case _:
            return event.kind


__all__ = ["describe_event", "event_line"]
