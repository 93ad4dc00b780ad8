"""Model access: a sweep's LLM gateway, and each scenario's route through it.

The sweep serves the gateway when any of its configurations runs a real harness (`start_gateway`); a
scenario reads its route only through `ModelAccess`, so the gateway alone writes what it records.
"""

from __future__ import annotations

import os

import anyio

from staminad.agents.base import adapter_for
from staminad.engine.config import LLMSettings, SweepFile, configurations
from staminad.engine.models import ModelSpec, sweep_models
from staminad.engine.spec import EventSink
from staminad.gateway.proxy import Call, Gateway, Limits, Route, Upstream
from staminad.gateway.routes import Recorder
from staminad.sandbox.base import SandboxFactory
from state.store import Store


class ModelAccess:
    """A scenario's route through the gateway, and the model its harness is told to use.

    The engine reads the route through this and changes it only through the gateway's methods, so
    the gateway alone writes what it records (cost, waits, model loss, the cap).
    """

    def __init__(
        self, gateway: Gateway, route: Route, model: str, window: int | None = None, compact_at: float | None = None
    ) -> None:
        self.gateway, self._route, self.model = gateway, route, model
        self.window, self.compact_at = window, compact_at

    def env(self, host: str) -> dict[str, str]:
        env = {"STAMINA_LLM_BASE_URL": self.gateway.base_url(self._route, host), "STAMINA_LLM_MODEL": self.model}
        if self.window:  # the launcher hands it to the harness's own settings (`staminad.agents.windows`)
            env["STAMINA_LLM_CONTEXT_WINDOW"] = str(self.window)
            if self.compact_at is not None:
                env["STAMINA_LLM_COMPACT_AT"] = str(self.compact_at)
        return env

    def begin_attempt(self, attempt_id: int, turn: int) -> None:
        self.gateway.begin_attempt(self._route, attempt_id, turn)

    def take_unavailable(self) -> str:
        return self.gateway.take_unavailable(self._route)

    @property
    def capped(self) -> str:
        """Why the cost cap ended this scenario's model access ("" while it has not)."""
        return self._route.capped

    @property
    def waited(self) -> float:
        """Seconds of upstream trouble the gateway waited out (or queued for the model) during the current attempt."""
        return self._route.waited

    @property
    def exhausted(self) -> str:
        """The model's words when a call of the current attempt was over its context window ("" if none was)."""
        return self._route.exhausted


def upstream_of(model: ModelSpec) -> Upstream:
    """The gateway's way to a model: its endpoint, its key from the daemon's environment, its price and limit."""
    key = os.environ.get(model.api_key_env, "") if model.api_key_env else ""
    return Upstream(model.endpoint, key, model.price, model.concurrency)


def build_gateway(llm: LLMSettings, emit: EventSink, record: Recorder | None = None) -> Gateway:
    """The sweep's gateway (not yet serving): its limits, prices, and every model's endpoint with its own limit."""
    limits = Limits(
        scenario_cost_cap=llm.scenario_cost_cap,
        sweep_cost_cap=llm.sweep_cost_cap,
        outage_timeout=llm.outage_timeout,
        stream_idle_timeout=llm.stream_idle_timeout,
        first_byte_timeout=llm.first_byte_timeout,
        concurrency=llm.concurrency,
    )
    models = [upstream_of(model) for model in sweep_models(llm)]
    first = models[0]  # each route names its own model's endpoint; this is a fallback
    return Gateway(first.endpoint, first.api_key, dict(llm.pricing), limits, emit, record, models)


async def start_gateway(
    sweep: SweepFile, store: Store, make_sandbox: SandboxFactory, emit: EventSink, tg: anyio.abc.TaskGroup
) -> Gateway | None:
    """Serve the sweep's LLM gateway if any configuration runs a real harness (None otherwise)."""
    llm = sweep.llm
    if llm is None or not any(adapter_for(c.agent).harness for c in configurations(sweep)):
        return None

    async def record(call: Call) -> None:
        await store.llm_call(
            call.scenario_id,
            call.attempt_id,
            call.turn,
            call.api,
            call.model,
            (call.usage.input, call.usage.output, call.usage.cached),
            call.cost,
            call.status,
            call.seconds,
            call.waited,
            call.streamed,
            call.estimated,
            (call.unpriced, call.abandoned, call.compaction),
        )

    gateway = build_gateway(llm, emit, record)
    await tg.start(gateway.serve, ["127.0.0.1", *await make_sandbox.llm_hosts()], 0)
    if gateway.port is not None:
        make_sandbox.llm_serving(gateway.port)  # the runtime opens its sandboxes' way to this port only
    return gateway


__all__ = ["ModelAccess", "build_gateway", "start_gateway", "upstream_of"]
