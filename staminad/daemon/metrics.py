"""Prometheus metrics for the ops dashboards (optional: `staminad start --metrics-port N`).

Fed from the event bus, so the engine knows nothing about them. Served on 127.0.0.1 only.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from protocol.errors import ExpectedError
from protocol.events import AttemptStarted, AttemptTested, EventData, InfraFailure, ScenarioFinished


class MetricsPortError(ExpectedError):
    """The metrics port cannot be listened on (taken, or not allowed): the daemon does not start."""


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.active = Gauge("staminad_active_scenarios", "Scenarios with an attempt under way", registry=r)
        self.attempts = Counter("staminad_attempts_total", "Attempts tested, by result", ["result"], registry=r)
        self.turns = Counter("staminad_turns_passed_total", "Turns passed", registry=r)
        self.infra = Counter("staminad_infra_failures_total", "Infrastructure failures by kind", ["kind"], registry=r)
        self.scenarios = Counter(
            "staminad_scenarios_finished_total", "Scenarios finished, by status", ["status"], registry=r
        )
        buckets = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
        self.suite = Histogram("staminad_suite_seconds", "Suite wall time", buckets=buckets, registry=r)
        self.server = Histogram("staminad_server_start_seconds", "Server start time", buckets=buckets, registry=r)
        self.tokens = Counter("staminad_llm_tokens_total", "LLM tokens where known", ["direction"], registry=r)

    def observe(self, data: EventData) -> None:
        match data:
            case AttemptStarted():
                self.active.inc()
            case AttemptTested():
                self.active.dec()
                self.attempts.labels("pass" if data.passed else "fail").inc()
                if data.passed:
                    self.turns.inc()
                self.suite.observe(data.suite_seconds)
                self.server.observe(data.server_seconds)
            case InfraFailure():
                self.active.dec()
                self.infra.labels(data.infra_kind).inc()
            case ScenarioFinished():
                self.scenarios.labels(data.status).inc()
            case _:
                pass

    def serve(self, port: int) -> None:
        try:
            start_http_server(port, addr="127.0.0.1", registry=self.registry)
        except OSError as exc:
            raise MetricsPortError(
                f"cannot serve metrics on 127.0.0.1:{port} (--metrics-port {port}): {exc.strerror or exc}; "
                "pick another port, or leave out --metrics-port"
            ) from None
