"""The gateway: sandboxes talk to models through it, so every token is attributed and every outage contained.

Each scenario gets a route token; its harness's base URL is `http://<gateway>/g/<token>/v1`, and the
gateway forwards `/g/<token>/v1/<rest>` to `<endpoint>/<rest>` of the scenario's model (`Upstream`: a sweep
may run several models, each on its own endpoint) with the real API key (the sandbox never
sees it), for model inference only (`allow.py`: anything else is refused with a 403 and logged, never
forwarded). Per call it records tokens and cost against sweep / scenario / turn / attempt.

Each endpoint admits a bounded number of calls at once (`limit.py`, adapted to overload and latency);
the rest queue, and time queued is the platform's: it is booked as waited, like an outage's backoff.

Upstream trouble that provably did not reach the model (429, 5xx answers, refused connections) is waited
out with jittered exponential backoff, honouring Retry-After, while the harness's request simply takes
longer; the wait is reported (`llm_wait` events) and given back to the turn's watchdog. A request the
upstream may still be processing (no first byte within `first_byte_timeout`, a connection lost after the
request went out, a 504) is never sent again. That, an outage longer than `outage_timeout`, a stream that
dies or stalls mid-way, or a provider error inside a 200 stream (`errors.py`) marks the attempt
`llm_unavailable`: the engine then counts it as an infrastructure failure (infra retry), never against R.

A refusal because the request is over the model's context window is passed to the harness (it may compact
and go on) and noted on the route (`exhausted`): if the harness then fails, the engine ends the scenario as
`context_exhausted`, the agent's long-horizon failure. The same oversized request sent again is answered
from the route without reaching the upstream. A scenario or sweep over its cost cap gets a clear error and
is stopped by the engine with status `capped`. Every call is metered; when the provider does not report
its usage, the gateway estimates it and marks the call so (`usage.estimate`).

This module owns the routes, the listeners and the checks before a request goes out; `forward` sends it,
waits out trouble and accounts the call; `routes` holds the shapes both share.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Sequence

import anyio
import httpx

from protocol.errors import UsageError
from protocol.events import LlmCapped
from staminad.gateway.allow import SUMMARY, upstream_target
from staminad.gateway.errors import context_refusal
from staminad.gateway.forward import Asked, Forwarder, gateway_error, model_of
from staminad.gateway.http import Request, Response, serve_connection
from staminad.gateway.limit import EndpointLimiter, LimiterStats
from staminad.gateway.pricing import Price
from staminad.gateway.routes import Call, Limits, Recorder, Route, Sink, Upstream
from staminad.gateway.stats import LIVE, EndpointStats
from staminad.gateway.usage import api_of, with_stream_usage

OVERSIZED_KEPT = 16  # per route: context refusals answered again without reaching the upstream
FORWARD_HEADERS = ("content-type", "accept", "anthropic-version", "anthropic-beta", "openai-beta", "user-agent")
# A harness's driver sets it to 1 on the call that summarises its context (mini-swe-agent's compaction): that call
# is recorded as the attempt's compaction. Never forwarded.
COMPACTION_HEADER = "x-staminabench-compaction"
REFUSALS_LOGGED = 20  # per route (and for unknown routes together): a probing agent cannot flood the daemon's log

log = logging.getLogger(__name__)


class Gateway(Forwarder):
    """The gateway of one sweep: its routes, its listeners, and the checks each request passes before `Forwarder`."""

    def __init__(
        self,
        endpoint: str,
        api_key: str,
        pricing: dict[str, Price],
        limits: Limits,
        emit: Sink,
        record: Recorder | None = None,
        models: Sequence[Upstream] = (),
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.api_key = api_key
        self.pricing, self.limits, self.emit, self.record = pricing, limits, emit, record
        self.routes: dict[str, Route] = {}
        self.by_scenario: dict[int, Route] = {}
        self.sweep_spent = 0.0
        self.unrouted = 0  # requests for no known route
        # One limiter per endpoint, made before any call, with the smallest concurrency a model served there names:
        # a fallback made first with `[llm] concurrency` would otherwise stand in for the first model's own limit.
        ceilings: dict[str, int] = {self.endpoint: limits.concurrency}
        named: dict[str, int] = {}
        for model in models:
            where = model.endpoint.rstrip("/")
            ceilings.setdefault(where, limits.concurrency)
            if model.concurrency is not None:
                named[where] = min(named.get(where, model.concurrency), model.concurrency)
        ceilings |= named
        self._limiters = {where: EndpointLimiter(where, ceiling) for where, ceiling in ceilings.items()}
        # For a route given no model's endpoint of its own.
        self.upstream = Upstream(self.endpoint, api_key, concurrency=ceilings[self.endpoint])
        self._unpriced: set[str] = set()
        # No pool bound or pool timeout: the limiter bounds connections, and a queued call is no outage.
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(limits.first_byte_timeout, connect=10.0, pool=None),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=limits.concurrency),
            follow_redirects=False,
            trust_env=False,
        )
        self.port: int | None = None
        self.stats = EndpointStats(endpoint=self.endpoint, cap=limits.sweep_cost_cap, endpoints=self.endpoint_stats)

    # --- routes -------------------------------------------------------------------------------

    def route(self, sweep: str, scenario_id: int, spent: float = 0.0, upstream: Upstream | None = None) -> Route:
        """The scenario's route (made on first use) to its model's `upstream` (the gateway's own endpoint when
        None); `spent` restores its cost after a restart."""
        existing = self.by_scenario.get(scenario_id)
        if existing is not None:
            return existing
        if upstream is not None:
            upstream = Upstream(upstream.endpoint.rstrip("/"), upstream.api_key, upstream.price, upstream.concurrency)
        route = Route(
            token=secrets.token_urlsafe(12), sweep=sweep, scenario_id=scenario_id, spent=spent, upstream=upstream
        )
        self.routes[route.token] = route
        self.by_scenario[scenario_id] = route
        self.sweep_spent += spent
        self.stats.sweep, self.stats.spent = sweep, self.sweep_spent
        return route

    def begin_attempt(self, route: Route, attempt_id: int, turn: int) -> None:
        """Calls from now on are this attempt's: its waits, model loss and context refusal start from nothing."""
        route.attempt_id, route.turn, route.waited, route.unavailable, route.exhausted = attempt_id, turn, 0.0, "", ""

    def take_unavailable(self, route: Route) -> str:
        """Why the current attempt lost its model ("" if it did not), cleared as it is read."""
        reason, route.unavailable = route.unavailable, ""
        return reason

    def endpoint_stats(self) -> list[LimiterStats]:
        """Each endpoint's adaptive limit, calls in flight and calls queued (for a metrics collector)."""
        return [limiter.stats() for limiter in self._limiters.values()]

    def limiter_for(self, route: Route) -> EndpointLimiter:
        """The limiter of the endpoint the route's calls go to: one per endpoint, however many models share it, with
        the concurrency its model names (the sweep's `[llm] concurrency` otherwise)."""
        upstream = route.upstream or self.upstream
        limiter = self._limiters.get(upstream.endpoint)
        if limiter is None:  # an endpoint no model listed at the start named
            limiter = EndpointLimiter(upstream.endpoint, upstream.concurrency or self.limits.concurrency)
            self._limiters[upstream.endpoint] = limiter
        return limiter

    def base_url(self, route: Route, host: str) -> str:
        assert self.port is not None, "the gateway is not serving"
        return f"http://{host}:{self.port}/g/{route.token}/v1"

    # --- serving ------------------------------------------------------------------------------

    async def serve(
        self, hosts: list[str], port: int, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        listeners: list[anyio.abc.Listener[anyio.abc.SocketStream]] = []
        try:
            for host in hosts:  # the first picks the port when none is given; the others take the same one
                try:
                    listeners.append(await anyio.create_tcp_listener(local_host=host, local_port=port))
                except OSError as exc:
                    raise UsageError(
                        f"the LLM gateway cannot listen on {host}:{port or 'any port'} ({exc.strerror or exc}): "
                        "an engine's gateway must be an address of this host"
                    ) from None
                port = port or int(listeners[0].extra(anyio.abc.SocketAttribute.local_port))
            self.port = port
            LIVE[id(self)] = self.stats
            async with anyio.create_task_group() as tg:
                for listener in listeners:
                    tg.start_soon(listener.serve, lambda s: serve_connection(s, self.handle))
                task_status.started()
        finally:
            LIVE.pop(id(self), None)
            with anyio.CancelScope(shield=True):
                for listener in listeners:
                    await listener.aclose()
                await self.client.aclose()

    async def handle(self, request: Request) -> Response:
        parts = request.path.split("/", 4)  # "", "g", token, "v1", rest
        route = self.routes.get(parts[2]) if len(parts) >= 4 and parts[1] == "g" else None
        if route is None or parts[3] != "v1":
            self.unrouted += 1
            self._log_refusal(self.unrouted, "no known route", request.method, request.path, "unknown route")
            return gateway_error(404, "unknown gateway route (each scenario has its own base URL)")
        rest = parts[4] if len(parts) > 4 else ""
        target = upstream_target(request.method, rest)
        if target is None:  # never forwarded: the real key must reach nothing but model inference
            route.refused += 1
            where = f"sweep {route.sweep}, scenario {route.scenario_id}"
            self._log_refusal(route.refused, where, request.method, f"/v1/{rest}", "not model inference")
            return gateway_error(
                403, f"{request.method} /v1/{rest[:200]} is not forwarded: only model inference ({SUMMARY})"
            )
        refusal = self._over_cap(route)
        if refusal:
            return gateway_error(402, refusal)
        if route.unavailable:  # this attempt already lost its model and will be retried: fail fast, spend nothing
            return gateway_error(503, f"model endpoint unavailable earlier in this attempt: {route.unavailable}")
        api = api_of(target)
        body = with_stream_usage(api, request.body) if request.method == "POST" else b""
        headers = {k: v for k, v in request.headers.items() if k in FORWARD_HEADERS}
        upstream = route.upstream or self.upstream
        # Anthropic's key header for its endpoints (count_tokens too) and for a client that speaks its API.
        if upstream.api_key and (target.startswith("messages") or "anthropic-version" in request.headers):
            headers["x-api-key"] = upstream.api_key
        elif upstream.api_key:  # a local endpoint may need no key at all
            headers["authorization"] = f"Bearer {upstream.api_key}"
        digest = hashlib.sha256(body).digest()
        if (oversized := route.oversized.get(digest)) is not None:  # sent again as it was: it cannot fit now either
            self._exhausted(route, context_refusal(oversized.status, oversized.body))
            return Response(oversized.status, dict(oversized.headers), oversized.body)
        asked = Asked(api, model_of(body), len(body), compaction=request.headers.get(COMPACTION_HEADER) == "1")
        response = await self._forward(route, asked, request.method, f"{upstream.endpoint}/{target}", headers, body)
        kept = len(route.oversized) < OVERSIZED_KEPT
        if response.stream is None and kept and context_refusal(response.status, response.body):
            route.oversized[digest] = response
        return response

    @staticmethod
    def _log_refusal(count: int, where: str, method: str, path: str, why: str) -> None:
        """One line per refused request, up to REFUSALS_LOGGED of them per route; then one saying so."""
        if count <= REFUSALS_LOGGED:
            log.warning("gateway refused %.20r %.300r (%s): %s", method, path, where, why)
        if count == REFUSALS_LOGGED:
            log.warning("gateway: further refused requests (%s) are not logged", where)

    def _over_cap(self, route: Route) -> str:
        """Why the route may spend no more ('' while it may); the event is sent once, when it becomes capped."""
        lim = self.limits
        if route.capped:
            return route.capped
        if lim.scenario_cost_cap is not None and route.spent >= lim.scenario_cost_cap:
            route.capped = f"scenario cost cap of ${lim.scenario_cost_cap:.2f} reached (${route.spent:.4f} spent)"
        elif lim.sweep_cost_cap is not None and self.sweep_spent >= lim.sweep_cost_cap:
            route.capped = f"sweep cost cap of ${lim.sweep_cost_cap:.2f} reached (${self.sweep_spent:.4f} spent)"
        if route.capped:
            self.emit(LlmCapped(scenario=route.scenario_id, reason=route.capped))
        return route.capped


# The shapes the Gateway's API takes, re-exported: the engine (engine/access.py) imports them here.
__all__ = ["COMPACTION_HEADER", "Call", "Gateway", "Limits", "Route", "Upstream"]
