"""The Prometheus series of `staminad.daemon.metrics`, as pure functions of figures already taken.

One function per source: the store's rows (`store_metrics`), the scheduler's slots, queues and engines
(`scheduler_metrics`), the gateways serving now (`gateway_metrics`) and the box (`box_metrics`). Each
only names and labels what it is handed; reading the figures (and bounding what is read) is the
collector's job in `metrics`, so these can be checked against any figures without a daemon. The
scheduler's figures are shaped here (`Scheduler`), so that this module needs nothing of `metrics`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from staminad.daemon.metrics_store import DURATIONS, StoreFigures
from staminad.gateway.stats import EndpointStats
from staminad.host.box import SandboxStats, box_snapshot

DURATION_NAMES = {
    "harness_seconds": ("staminad_harness_seconds", "Harness run time per attempt"),
    "server_seconds": ("staminad_server_start_seconds", "Server start time per attempt"),
    "suite_seconds": ("staminad_suite_seconds", "Suite run time per attempt"),
}
assert set(DURATION_NAMES) == set(DURATIONS)


@dataclass
class EngineFigures:
    url: str
    slots: int
    used: int
    healthy: bool
    down_since: float = 0.0  # Unix time an outage its scenarios wait out began; 0 while it answers
    waiting: int = 0  # scenarios paused until it answers again


@dataclass
class Scheduler:
    """The daemon's slots as the scheduler holds them now (taken on the event loop, in one go)."""

    limit: int
    in_use: int
    sweeps: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # sweep -> (parallel, active, queued)
    engines: list[EngineFigures] = field(default_factory=list)
    sandboxes: tuple[SandboxStats, ...] = ()
    sandboxes_at: float = 0.0


def gauge(name: str, doc: str, samples: list[tuple[tuple[str, ...], float]], labels: tuple[str, ...] = ()) -> Metric:
    family = GaugeMetricFamily(name, doc, labels=list(labels))
    for values, value in samples:
        family.add_metric(list(values), float(value))
    return family


def counter(name: str, doc: str, samples: list[tuple[tuple[str, ...], float]], labels: tuple[str, ...]) -> Metric:
    family = CounterMetricFamily(name, doc, labels=list(labels))
    for values, value in samples:
        family.add_metric(list(values), float(value))
    return family


SCM = ("sweep", "configuration", "model")


def store_metrics(f: StoreFigures) -> Iterator[Metric]:
    """Series from the store's rows (bounded sweeps; see `metrics_store`)."""
    m = f.model
    yield gauge(
        "staminad_sweep_status",
        "1 for each exported sweep, labelled with its status",
        [((s.id, s.status), 1) for s in f.sweeps],
        ("sweep", "status"),
    )
    yield gauge(
        "staminad_scenarios",
        "Scenarios by status (pending, running, done, failed, infra_failed, capped)",
        [((s, c, m(s, c), st), n) for (s, c, st), n in sorted(f.scenarios.items())],
        (*SCM, "status"),
    )
    yield counter(
        "staminad_attempts",
        "Attempts recorded, by outcome (pass, fail, infra; running while under way)",
        [((s, c, m(s, c), o), n) for (s, c, o), n in sorted(f.attempts.items())],
        (*SCM, "outcome"),
    )
    yield counter(
        "staminad_turns_passed",
        "Turns passed by the sweep's scenarios",
        [((s, c, m(s, c)), n) for (s, c), n in sorted(f.turns_passed.items())],
        SCM,
    )
    yield counter(
        "staminad_infra_failures",
        "Infrastructure failures recorded, by kind",
        [((s, c, m(s, c), k), n) for (s, c, k), n in sorted(f.infra.items())],
        (*SCM, "kind"),
    )
    yield gauge(
        "staminad_last_attempt_finished_timestamp_seconds",
        "When the sweep's latest attempt outcome was recorded (unix time)",
        [((s,), t) for s, t in sorted(f.last_finished.items())],
        ("sweep",),
    )
    for column, (name, doc) in DURATION_NAMES.items():
        family = HistogramMetricFamily(name, doc, labels=list(SCM))
        for (s, c, col), h in sorted(f.durations.items()):
            if col == column:
                family.add_metric([s, c, m(s, c)], [(le, float(n)) for le, n in h.buckets], h.total)
        yield family
    yield counter(
        "staminad_llm_tokens",
        "Model tokens recorded by the gateway, by direction (input, output; cached is part of input)",
        [((s, c, m(s, c), d), n) for (s, c, d), n in sorted(f.tokens.items())],
        (*SCM, "direction"),
    )
    yield counter(
        "staminad_llm_calls",
        "Model calls recorded by the gateway",
        [((s, c, m(s, c)), n) for (s, c), n in sorted(f.llm_calls.items())],
        SCM,
    )
    yield gauge(
        "staminad_llm_spend_dollars",
        "Dollars spent on model calls by the sweep (0 where it calls none)",
        [((s.id,), f.spend.get(s.id, 0.0)) for s in f.sweeps],
        ("sweep",),
    )
    yield gauge(
        "staminad_llm_cost_cap_dollars",
        "The sweep's cost cap ([llm] sweep_cost_cap), where it has one",
        [((s.id,), s.cost_cap) for s in f.sweeps if s.cost_cap is not None],
        ("sweep",),
    )


def scheduler_metrics(s: Scheduler) -> Iterator[Metric]:
    yield gauge("staminad_slots", "The daemon's scenario slots (--parallel)", [((), s.limit)])
    yield gauge("staminad_slots_in_use", "Scenario slots held now, every sweep together", [((), s.in_use)])
    rows = sorted(s.sweeps.items())
    yield gauge(
        "staminad_sweep_parallel", "The sweep's own limit ([run] parallel)", [((n,), v[0]) for n, v in rows], ("sweep",)
    )
    yield gauge(
        "staminad_active_scenarios",
        "Scenarios running now: holding a slot and not held at a pause",
        [((n,), v[1]) for n, v in rows],
        ("sweep",),
    )
    yield gauge(
        "staminad_queued_scenarios", "Scenarios waiting for a slot", [((n,), v[2]) for n, v in rows], ("sweep",)
    )
    e = s.engines
    yield gauge("staminad_engine_slots", "Slots of the Docker engine", [((x.url,), x.slots) for x in e], ("engine",))
    yield gauge(
        "staminad_engine_slots_used",
        "Slots held on the engine, every sweep",
        [((x.url,), x.used) for x in e],
        ("engine",),
    )
    yield gauge(
        "staminad_engine_healthy",
        "1 while the engine answers its ping",
        [((x.url,), x.healthy) for x in e],
        ("engine",),
    )
    yield gauge(
        "staminad_engine_down_since_timestamp_seconds",
        "When the outage its scenarios wait out began (0 while the engine answers)",
        [((x.url,), x.down_since) for x in e],
        ("engine",),
    )
    yield gauge(
        "staminad_engine_scenarios_waiting",
        "Scenarios paused until the engine answers again",
        [((x.url,), x.waiting) for x in e],
        ("engine",),
    )


def gateway_metrics(live: list[EndpointStats]) -> Iterator[Metric]:
    """Series of the gateways serving now, one per sweep that calls a model."""
    se = ("sweep", "endpoint")
    yield gauge(
        "staminad_gateway_requests_in_flight",
        "Requests forwarded to the endpoint and not answered in full",
        [((g.sweep, g.endpoint), g.in_flight) for g in live],
        se,
    )
    yield gauge(
        "staminad_gateway_requests_retrying",
        "Requests waiting out upstream trouble (429, 5xx, timeouts) before trying again",
        [((g.sweep, g.endpoint), g.retrying) for g in live],
        se,
    )
    yield counter(
        "staminad_gateway_responses",
        "Upstream answers passed on to the harness, by HTTP status",
        [((g.sweep, g.endpoint, str(code)), n) for g in live for code, n in sorted(g.responses.items())],
        (*se, "code"),
    )
    yield counter(
        "staminad_gateway_upstream_errors",
        "Upstream trouble met (429, 5xx, timeout, unreachable, broken), each try counted",
        [((g.sweep, g.endpoint, kind), n) for g in live for kind, n in sorted(g.errors.items())],
        (*se, "kind"),
    )
    yield counter(
        "staminad_gateway_tokens",
        "Tokens through the gateway since it started, by direction",
        [
            ((g.sweep, g.endpoint, d), n)
            for g in live
            for d, n in (("input", g.tokens_in), ("output", g.tokens_out), ("cached", g.tokens_cached))
        ],
        (*se, "direction"),
    )
    for name, doc, attr in (
        ("staminad_gateway_request_seconds", "Request latency, request in to response end", "latency"),
        ("staminad_gateway_first_token_seconds", "Time to the first byte of the response body", "first_token"),
    ):
        family = HistogramMetricFamily(name, doc, labels=list(se))
        for g in live:
            h = getattr(g, attr)
            family.add_metric([g.sweep, g.endpoint], [(le, float(n)) for le, n in h.cumulative()], h.total)
        yield family
    yield gauge(
        "staminad_gateway_spend_dollars",
        "Dollars the sweep spent through the gateway (restored after a restart)",
        [((g.sweep, g.endpoint), g.spent) for g in live],
        se,
    )
    yield counter(
        "staminad_gateway_calls_flagged",
        "Calls whose cost is not exact: estimated (no usage reported), unpriced (no price), abandoned",
        [((g.sweep, g.endpoint, b), n) for g in live for b, n in sorted(g.flagged.items())],
        (*se, "basis"),
    )
    limits = [(g.sweep, x) for g in live for x in (g.endpoints() if g.endpoints is not None else [])]
    for name, doc, attr in (
        ("staminad_gateway_endpoint_limit", "Calls the endpoint admits at once now (adapted to overload)", "limit"),
        ("staminad_gateway_endpoint_ceiling", "The endpoint's configured concurrency (the limit's ceiling)", "ceiling"),
        ("staminad_gateway_endpoint_queued", "Calls waiting for a slot at the endpoint", "queued"),
    ):
        yield gauge(name, doc, [((sweep, x.endpoint), getattr(x, attr)) for sweep, x in limits], se)
    yield counter(
        "staminad_gateway_endpoint_throttled",
        "Overload answers (429, 503, 529) the endpoint gave, each halving its limit at most once per cooldown",
        [((sweep, x.endpoint), x.throttled) for sweep, x in limits],
        se,
    )
    yield gauge(
        "staminad_gateway_cost_cap_dollars",
        "The sweep's cost cap, where it has one",
        [((g.sweep, g.endpoint), g.cap) for g in live if g.cap is not None],
        se,
    )


def box_metrics(state_dir: Path, scheduler: Scheduler | None, docker_root: Path | None) -> Iterator[Metric]:
    disks = {"state": state_dir, **({"docker": docker_root} if docker_root is not None else {})}
    sandboxes = scheduler.sandboxes if scheduler is not None else ()
    box = box_snapshot(disks, sandboxes, scheduler.sandboxes_at if scheduler is not None else 0.0)
    yield gauge(
        "staminad_load_average",
        "The box's load average",
        [((p,), v) for p, v in zip(("1m", "5m", "15m"), box.load, strict=True)],
        ("period",),
    )
    yield gauge("staminad_cpus", "CPUs of the box", [((), box.cpus)])
    yield gauge("staminad_memory_total_bytes", "Memory of the box", [((), box.memory_total_bytes)])
    yield gauge("staminad_memory_available_bytes", "Memory available", [((), box.memory_available_bytes)])
    yield gauge(
        "staminad_disk_free_bytes",
        "Free space of the state directory's and Docker's data root's file systems",
        [((d.name, d.path), d.free_bytes) for d in box.disks],
        ("disk", "path"),
    )
    yield gauge(
        "staminad_disk_total_bytes",
        "Size of the file system",
        [((d.name, d.path), d.total_bytes) for d in box.disks],
        ("disk", "path"),
    )
    g = box.gpus
    yield gauge(
        "staminad_gpu_available",
        "1 when NVML reports the GPUs; 0 says why in `reason` (no nvidia-ml-py, no driver)",
        [((g.reason,), g.available)],
        ("reason",),
    )
    devs = [(str(d.index), d.name) for d in g.devices]
    yield gauge(
        "staminad_gpu_utilization_percent",
        "GPU busy time over NVML's last sample period",
        [(k, d.utilization) for k, d in zip(devs, g.devices, strict=True)],
        ("gpu", "name"),
    )
    yield gauge(
        "staminad_gpu_memory_used_bytes",
        "GPU memory in use",
        [(k, d.memory_used_bytes) for k, d in zip(devs, g.devices, strict=True)],
        ("gpu", "name"),
    )
    yield gauge(
        "staminad_gpu_memory_total_bytes",
        "GPU memory",
        [(k, d.memory_total_bytes) for k, d in zip(devs, g.devices, strict=True)],
        ("gpu", "name"),
    )
    yield gauge(
        "staminad_gpu_process_memory_bytes",
        "GPU memory held per process (which process holds the GPU: the model server or a sandbox)",
        [((str(d.index), str(p.pid), p.name), p.used_memory_bytes) for d in g.devices for p in d.processes],
        ("gpu", "pid", "process"),
    )
    yield gauge(
        "staminad_sandbox_cpu_percent",
        "A sandbox container's CPU (100 = one core), sampled at most every box.SAMPLE_EVERY seconds",
        [((s.name,), s.cpu_percent) for s in box.sandboxes],
        ("sandbox",),
    )
    yield gauge(
        "staminad_sandbox_memory_bytes",
        "A sandbox container's memory (page cache left out)",
        [((s.name,), s.memory_bytes) for s in box.sandboxes],
        ("sandbox",),
    )
    yield gauge(
        "staminad_sandbox_memory_limit_bytes",
        "A sandbox container's memory limit",
        [((s.name,), s.memory_limit_bytes) for s in box.sandboxes],
        ("sandbox",),
    )


__all__ = [
    "EngineFigures",
    "Scheduler",
    "box_metrics",
    "counter",
    "gateway_metrics",
    "gauge",
    "scheduler_metrics",
    "store_metrics",
]
