"""A sweep the daemon runs: the handle it keeps while the sweep's task is alive, and the one line it records when
that task fails.

`Running` is what the operator's actions (`staminad.daemon.control`), the shutdown and the metrics reach a running
sweep through: its gate, its cancel scope, its end and its requeue stream. `failure_reason` is the bounded line a
failed sweep keeps in the store and shows in `status`.
"""

from __future__ import annotations

import math
from typing import Any

import anyio

from protocol.errors import describe, leaves
from staminad.engine.gate import Gate


class Running:
    """A sweep the daemon runs: its gate (pause), its scope (cancel), its end, and the scenarios requeued to it."""

    def __init__(self, name: str, gate: Gate) -> None:
        self.name, self.gate = name, gate
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        # Unbounded: an operator's retries are few, and a full buffer must never refuse one.
        self.requeue, self.requeued = anyio.create_memory_object_stream[int](math.inf)
        self.factory: Any = None  # its runtime, once chosen (an EnginePool tells which engine holds what)

    def close(self) -> None:
        """Close both ends of the requeue stream once the sweep is not running: a later retry starts it anew."""
        self.requeue.close()
        self.requeued.close()


REASON_LIMIT = 300  # characters of a failed sweep's reason that are kept (the log has it whole)
REASON_CAUSES = 5  # a task group's failures named in the reason; the rest are counted


def failure_reason(exc: BaseException) -> str:
    """Why a sweep failed, in one bounded line: each cause inside a task group's wrapper, as `staminad run` says it."""
    found = leaves(exc)
    text = "; ".join(describe(leaf) for leaf in found[:REASON_CAUSES])
    if len(found) > REASON_CAUSES:
        text += f"; and {len(found) - REASON_CAUSES} more"
    line = " ".join(text.split()) or type(exc).__name__
    return line if len(line) <= REASON_LIMIT else line[: REASON_LIMIT - 3] + "..."


__all__ = ["REASON_CAUSES", "REASON_LIMIT", "Running", "failure_reason"]
