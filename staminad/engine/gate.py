"""The pause gate: holds scenarios before each new attempt while a sweep is paused.

A running attempt always completes; the gate counts the attempts past it (so a pause knows when the
engine is idle) and the scenarios held at it (they hold a slot but run nothing).
"""

from __future__ import annotations

import anyio


class Gate:
    """Holds scenarios before each new attempt while paused (a running attempt always completes)."""

    def __init__(self) -> None:
        self._open = anyio.Event()
        self._open.set()
        self.active = 0  # attempts that passed the gate and are not yet recorded as tested
        self.held = 0  # scenarios waiting at the closed gate: they hold a slot but run nothing
        self._idle = anyio.Event()  # set while no attempt is active
        self._idle.set()

    def enter(self) -> None:
        """An attempt passed the gate."""
        self.active += 1
        if self._idle.is_set():
            self._idle = anyio.Event()

    def leave(self) -> None:
        """An attempt is recorded (or given up): the gate is idle again once the last one leaves."""
        self.active -= 1
        if self.active == 0:
            self._idle.set()

    async def idle(self) -> None:
        """Return once no attempt is active (at once if none is)."""
        await self._idle.wait()

    @property
    def paused(self) -> bool:
        return not self._open.is_set()

    def pause(self) -> None:
        if self._open.is_set():
            self._open = anyio.Event()

    def resume(self) -> None:
        self._open.set()

    async def wait(self) -> None:
        held = not self._open.is_set()
        self.held += held
        try:
            await self._open.wait()
        finally:
            self.held -= held


__all__ = ["Gate"]
