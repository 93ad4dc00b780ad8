"""The engines a running sweep's sandboxes use, as `status`, the TUI and the metrics show them.

An engine pool (`[run] engines`, `--engine`) reports each engine's slots and health itself; a sweep on the one
local engine has no pool, so its engine is shown only while an outage pauses its scenarios (its outage watch,
`staminad.sandbox.outage`), with when the outage began and how many scenarios wait for it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from protocol import EngineInfo


def engines_of(factory: Any) -> tuple[EngineInfo, ...]:
    """The engines of one sweep's runtime (`factory`), as the daemon shows them now."""
    status = getattr(factory, "status", None)
    if status is not None:
        return tuple(EngineInfo(**msgspec.structs.asdict(e)) for e in status())
    watch_of = getattr(factory, "watch", None)
    watch = watch_of() if watch_of is not None else None
    if watch is None or not (watch.down or watch.waiting):
        return ()
    return (
        EngineInfo(
            url=watch.url,
            slots=0,
            used=0,
            healthy=not watch.down,
            detail=watch.detail,
            down_since=watch.down_since,
            waiting=watch.waiting,
        ),
    )


def outage_line(e: EngineInfo, now: float) -> str:
    """How an engine's outage reads in `status` and the TUI ("" while it answers and none waits for it)."""
    if not e.down_since:
        return ""
    return f"down for {max(0.0, now - e.down_since):.0f} s, {e.waiting} scenarios paused until it answers"


__all__ = ["engines_of", "outage_line"]
