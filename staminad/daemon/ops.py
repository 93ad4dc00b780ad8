"""The box at a glance for the ops views: a bounded history ring sampled in the daemon, and the `OpsReport`.

`OpsRing.serve` samples the box (`host.sample`) and the daemon's slots every `every` seconds into a ring of
at most `points` samples (default 10 s x 2,160 = the last 6 hours, about 100 bytes a point): the sparklines of
`staminad view`'s /ops page and the TUI's box screen. `report` puts that history beside what is true now: the
sweeps (progress, slots, time left, why one is paused), the engines, the model endpoints, the box.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from protocol import EngineInfo, SweepInfo
from protocol.messages import BoxSample, OpsEndpoint, OpsPoint, OpsReport, OpsSweep
from staminad.daemon import views
from staminad.daemon.logs import log
from staminad.host.sample import sample_box
from state import sweeps

if TYPE_CHECKING:
    from staminad.engine.fair import FairLimiter
    from state.store import Store

EVERY = 10.0  # seconds between history points
POINTS = 2160  # history points kept: 6 hours at EVERY


class OpsRing:
    """The last `points` samples of the box and the daemon's slots, oldest first."""

    def __init__(self, disks: dict[str, Path], every: float = EVERY, points: int = POINTS) -> None:
        self.disks, self.every = disks, every
        self.points: deque[OpsPoint] = deque(maxlen=points)
        self.last: BoxSample | None = None

    def sample(self, active: int) -> BoxSample:
        box = sample_box(self.disks)
        self.last = box
        used = 1 - box.memory_available / box.memory_total if box.memory_total else 0.0
        state = next((d for d in box.disks if d.role == "state"), None)
        self.points.append(
            OpsPoint(
                at=box.at,
                load=box.load[0],
                memory_used=used,
                state_free=state.free if state else 0,
                active=active,
                gpu_util=sum(g.util for g in box.gpus) / len(box.gpus) if box.gpus else -1.0,
            )
        )
        return box

    async def serve(self, active: Callable[[], int]) -> None:
        """Sample every `every` seconds until cancelled (the sample is read off the event loop)."""
        while True:
            try:
                await anyio.to_thread.run_sync(self.sample, active())
            except Exception:  # noqa: BLE001 - an odd /proc must never stop the daemon: the history just has a gap
                log.exception("sampling the box failed")
            await anyio.sleep(self.every)  # the sampling period, not synchronisation


def eta(info: SweepInfo, now: float) -> float:
    """Seconds left at the pace so far (running time per finished scenario); -1 when unknowable."""
    total = sum(c.scenarios for c in info.configurations)
    done = sum(c.finished for c in info.configurations)
    if info.status != "running" or not info.created_at or not 0 < done < total:
        return 0.0 if total and done == total else -1.0
    return max(0.0, now - info.created_at - info.paused_seconds) / done * (total - done)


def _cap(config: str) -> float:
    try:
        cap = (json.loads(config).get("llm") or {}).get("sweep_cost_cap")
    except (ValueError, AttributeError):
        return 0.0
    return float(cap) if isinstance(cap, int | float) else 0.0


async def report(
    store: Store,
    ring: OpsRing,
    infos: list[SweepInfo],
    limiter: FairLimiter,
    history: int,
    expanding: dict[str, tuple[int, int]] | None = None,
) -> OpsReport:
    """The ops view now: `infos` are the sweeps with their slots (`Daemon.with_slots`), `expanding` the sweeps
    still being laid out (recorded, total)."""
    now = time.time()
    box = ring.last if ring.last is not None and now - ring.last.at < ring.every else None
    if box is None:
        box = await anyio.to_thread.run_sync(sample_box, ring.disks)
    engines: dict[str, EngineInfo] = {}
    for info in infos:
        for e in info.engines:
            engines[e.url] = e
    out = []
    caps: dict[str, float] = {}
    for info in infos:
        total = sum(c.scenarios for c in info.configurations)
        done, of = (expanding or {}).get(info.sweep, (0, 0))
        out.append(
            OpsSweep(
                sweep=info.sweep,
                status=info.status,
                finished=sum(c.finished for c in info.configurations),
                scenarios=max(total, of),
                active=info.active,
                queued=info.queued,
                parallel=info.parallel,
                eta=eta(info, now),
                reason=info.reason,
                expanding=done,
                expand_total=of,
            )
        )
        found = await sweeps.find_sweep(store, info.sweep)
        caps[info.sweep] = _cap(found.config) if found else 0.0
    endpoints = tuple(
        OpsEndpoint(
            sweep=e.sweep,
            model=e.model,
            calls=e.calls,
            errors=e.errors,
            latency=e.latency,
            spend=e.spend,
            cap=caps.get(e.sweep, 0.0),
        )
        for e in await sweeps.endpoint_figures(store)
    )
    points = tuple(ring.points)[-history:] if history > 0 else ()
    return OpsReport(
        at=now,
        sweeps=tuple(out),
        engines=tuple(engines.values()),
        limit=limiter.total,
        in_use=limiter.in_use,
        endpoints=endpoints,
        box=box,
        history=points,
        sample_every=ring.every,
        stall=store.space.stall,
    )


async def sweep_infos(store: Store, with_slots: Callable[[SweepInfo], SweepInfo]) -> list[SweepInfo]:
    """Every sweep's figures with its slots, read in one hop off the event loop (`views.sweep_infos`)."""
    return [with_slots(info) for info in await views.sweep_infos(store)]


__all__ = ["EVERY", "POINTS", "OpsRing", "eta", "report", "sweep_infos"]
