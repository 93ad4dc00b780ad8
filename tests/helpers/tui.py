"""For TUI tests: wait for a condition on the app while a real daemon works in the same event loop."""

from __future__ import annotations

from collections.abc import Callable

import anyio
from textual.pilot import Pilot


async def settle(pilot: Pilot[None], condition: Callable[[], bool], timeout: float = 60) -> None:
    """Let the app process messages until `condition` holds (bounded)."""
    with anyio.fail_after(timeout):
        while not condition():
            await pilot.pause(0.02)  # yields to the daemon and the app; the condition is what we wait for
