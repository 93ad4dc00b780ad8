"""The daemon's watch over orphaned sandboxes: removed at every start, then looked for again every `EVERY` seconds.

At start the daemon removes, on every engine it uses, each sandbox whose state directory is gone or no longer
needs it (`staminad.sandbox.docker.orphans`, a log line each); its own sweeps' sandboxes that a resume takes up
are needed, so they stay. Orphans that appear later (another state directory deleted while this daemon runs)
are only shown, by `status`'s ops page, the TUI's box screen and the `staminad_orphaned_sandboxes` metric (an
alert fires on it); `staminad sandboxes --prune` removes them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from protocol import SandboxInfo

if TYPE_CHECKING:
    from staminad.sandbox.docker.enginespec import EngineSpec

log = logging.getLogger(__name__)
EVERY = 60.0  # seconds between two looks for orphans (one listing per engine)
LOOK_TIMEOUT = 300.0  # bound on one look (engines that do not answer are given up on sooner, each)


class OrphanWatch:
    """What the last look found: the orphans still there (for the ops page, the TUI and the metrics)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir.resolve()
        self.orphans: tuple[SandboxInfo, ...] = ()
        self.at = 0.0  # when the last look ended (0: none yet)
        self.looked = anyio.Event()  # set once the start's look (and removal) is done

    async def serve(self, engines: Callable[[], list[EngineSpec]]) -> None:
        """Remove the orphans at start, then look again every EVERY seconds (a periodic look, not a wait)."""
        prune = True
        while True:
            await self.look(engines(), prune)
            self.looked.set()
            prune = False
            await anyio.sleep(EVERY)

    async def look(self, engines: list[EngineSpec], prune: bool) -> None:
        import time

        from staminad.sandbox.docker.orphans import engines_used, survey

        with anyio.move_on_after(LOOK_TIMEOUT):
            found = await survey(engines_used(self.state_dir, engines), self.state_dir, prune)
            if prune:
                log.info(
                    "looked for orphaned sandboxes at start on %d engines: %d removed, %d left",
                    len(found.sandboxes and {s.engine for s in found.sandboxes}),
                    len(found.removed),
                    len(found.orphans),
                )
            for line in found.unanswered:
                log.debug("orphaned sandboxes not looked for: %s", line)
            self.orphans, self.at = found.orphans, time.time()


__all__ = ["EVERY", "OrphanWatch"]
