"""Prometheus metrics for the ops dashboards (optional: `staminad start --metrics-port N`), served on 127.0.0.1
(`--metrics-host ADDRESS` for a Prometheus on another host).

Every series is computed when Prometheus scrapes (a custom collector), never counted up and down beside
the truth: scenarios, attempts, turns, infra failures, durations, tokens and spend from the store
(`metrics_store`, bounded to the unfinished sweeps plus the last few finished); slots, queues and
engines from the scheduler, read on the daemon's event loop; the gateways of running sweeps
(`gateway.stats`); the box (`box`: load, memory, disks, GPUs, sandbox containers). Label sets stay
bounded: sweeps as above, configurations as their sweep files name them, one endpoint per gateway,
at most `box.MAX_SANDBOXES` sandboxes. This module reads the figures and serves them; `metrics_series`
names and labels them. `ops/` holds the dashboard and alert rules over these names.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.from_thread
import anyio.lowlevel
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from protocol.errors import ExpectedError
from staminad.daemon.enginestate import engines_of
from staminad.daemon.metrics_series import (
    EngineFigures,
    Scheduler,
    box_metrics,
    gateway_metrics,
    gauge,
    scheduler_metrics,
    store_metrics,
)
from staminad.daemon.metrics_store import StoreFigures, read_figures
from staminad.gateway.stats import LIVE
from staminad.host.box import SandboxSampler

if TYPE_CHECKING:
    from pathlib import Path

    from staminad.daemon.running import Running
    from staminad.engine.fair import FairLimiter
    from staminad.sandbox.docker.enginepool import Slots
    from staminad.sandbox.docker.enginespec import EngineSpec


class Daemon(Protocol):
    """What the metrics read of the running daemon (`daemon.service.Daemon` is one): its state directory, its
    runtime override, the scheduler's limiter, its running sweeps and its `--engine`s. A protocol, so the
    service, which starts the metrics, is not imported back by them."""

    state_dir: Path
    runtime: str | None
    limiter: FairLimiter
    running: dict[str, Running]
    engines: list[EngineSpec]
    engine_slots: dict[str, Slots]


log = logging.getLogger(__name__)

LOOP_TIMEOUT = 10.0  # seconds a scrape waits for the event loop to hand over the scheduler's figures


class MetricsPortError(ExpectedError):
    """The metrics port cannot be listened on (taken, or not allowed): the daemon does not start."""


def scheduler_of(daemon: Daemon) -> Scheduler:
    """The scheduler's figures: per sweep its limit, the scenarios running (holding a slot, not held at a
    pause: as `staminad status` counts them) and queued; per engine its slots and health."""
    out = Scheduler(limit=daemon.limiter.total, in_use=daemon.limiter.in_use)
    for name, run in list(daemon.running.items()):
        held = daemon.limiter.held.get(name, 0)
        out.sweeps[name] = (
            daemon.limiter.caps.get(name, 0),
            max(0, held - run.gate.held),
            daemon.limiter.waiting(name),
        )
        for e in engines_of(run.factory):
            if all(f.url != e.url for f in out.engines):
                out.engines.append(EngineFigures(e.url, e.slots, e.used, e.healthy, e.down_since, e.waiting))
    for spec in daemon.engines:  # `--engine`s no running sweep uses yet: their slots are all free
        if all(f.url != spec.url for f in out.engines):
            slots = daemon.engine_slots.get(spec.url)
            out.engines.append(EngineFigures(spec.url, spec.slots, slots.used if slots else 0, True))
    return out


class DaemonCollector(Collector):
    """Builds every series from the daemon's parts at each scrape (see the module docstring)."""

    def __init__(self, daemon: Daemon, token: Any) -> None:
        self.daemon, self.token = daemon, token
        self.sampler = SandboxSampler(daemon.state_dir / "sandboxes")

    def collect(self) -> Iterator[Metric]:
        try:
            scheduler: Scheduler | None = anyio.from_thread.run(self._on_loop, token=self.token)
        except Exception:  # noqa: BLE001 - the loop is stopping: the scrape still gets the store and the box
            scheduler = None
        try:
            figures: StoreFigures | None = read_figures(self.daemon.state_dir / "staminad.db")
        except Exception:
            log.exception("metrics: cannot read the store")
            figures = None
        yield gauge("staminad_store_readable", "1 when the scrape could read the store", [((), figures is not None)])
        if figures is not None:
            yield from store_metrics(figures)
        if scheduler is not None:
            yield from scheduler_metrics(scheduler)
        yield from gateway_metrics(list(LIVE.values()))
        watch = getattr(self.daemon, "orphan_watch", None)  # the last look's orphans (`orphanwatch`)
        orphans = watch.orphans if watch is not None else ()
        yield gauge(
            "staminad_orphaned_sandboxes",
            "Sandbox containers and volumes whose state directory is gone or no longer needs them",
            [((), len(orphans))],
        )
        yield from box_metrics(self.daemon.state_dir, scheduler, self.sampler.docker_root)

    async def _on_loop(self) -> Scheduler:
        with anyio.fail_after(LOOP_TIMEOUT):
            sandboxes = await self.sampler.sample()
        out = scheduler_of(self.daemon)
        out.sandboxes, out.sandboxes_at = sandboxes, self.sampler.at
        local = self.sampler.engine
        if not out.engines and local is not None and self.daemon.runtime in (None, "auto", "docker"):
            # One engine, the local one: its health is exported too (else EngineUnhealthy could never fire).
            out.engines.append(EngineFigures(local[0], out.limit, out.in_use, local[1]))
        return out


class Metrics:
    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.registry = CollectorRegistry()
        self.http: tuple[Any, Any] | None = None  # the HTTP server and its thread, once serving

    def serve(self, port: int, host: str = "127.0.0.1") -> None:
        """Listen on `host`:`port` (a thread); call from the daemon's event loop, which scrapes read from."""
        self.registry.register(DaemonCollector(self.daemon, anyio.lowlevel.current_token()))
        try:
            self.http = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            raise MetricsPortError(
                f"cannot serve metrics on {host}:{port} (--metrics-host {host} --metrics-port {port}): "
                f"{exc.strerror or exc}; pick another port or an address of this host, or leave out --metrics-port"
            ) from None


__all__ = ["DaemonCollector", "Metrics", "MetricsPortError", "Scheduler", "scheduler_of"]
