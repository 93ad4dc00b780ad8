"""The gateway: sandboxes talk to models through it, so every token is attributed and every outage contained.

Each scenario gets a route token; its harness's base URL is `http://<gateway>/g/<token>/v1`, and the
gateway forwards `/g/<token>/v1/<rest>` to `<endpoint>/<rest>` of the scenario's model (`Upstream`: a sweep
may run several models, each on its own endpoint) with the real API key (the sandbox never
sees it), for model inference only (`allow.py`: anything else is refused with a 403 and logged, never
forwarded). Per call it records tokens and cost against sweep / scenario / turn / attempt.

Upstream trouble (429, 5xx, refused or reset connections, no first byte in time) is waited out with
exponential backoff, honouring Retry-After, while the harness's request simply takes longer; the wait
is reported (`llm_wait` events) and given back to the turn's watchdog. An outage longer than
`outage_timeout`, or a stream that dies or stalls mid-way, marks the attempt `llm_unavailable`: the
engine then counts it as an infrastructure failure (infra retry), never against R. A scenario or sweep
over its cost cap gets a clear error and is stopped by the engine with status `capped`.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from protocol.errors import UsageError
from protocol.events import EventData, LlmCall, LlmCapped, LlmUnavailable, LlmWait
from staminad.gateway.allow import SUMMARY, upstream_target
from staminad.gateway.http import Request, Response, serve_connection
from staminad.gateway.pricing import Price, cost, price_for
from staminad.gateway.usage import Api, StreamMeter, Usage, api_of, from_body, with_stream_usage

RETRY_STATUSES = frozenset((408, 409, 425, 429, 500, 502, 503, 504, 529))
FORWARD_HEADERS = ("content-type", "accept", "anthropic-version", "anthropic-beta", "openai-beta", "user-agent")
MAX_RESPONSE = 64 * 1024 * 1024
REFUSALS_LOGGED = 20  # per route (and for unknown routes together): a probing agent cannot flood the daemon's log

log = logging.getLogger(__name__)

Sink = Callable[[EventData], None]
Recorder = Callable[["Call"], Any]  # awaitable: persists one call


@dataclass
class Limits:
    scenario_cost_cap: float | None = None
    sweep_cost_cap: float | None = None
    outage_timeout: float = 600.0  # seconds of upstream trouble one request waits out before giving up
    first_byte_timeout: float = 300.0  # seconds to the response head (a slow model is not an outage)
    stream_idle_timeout: float = 120.0  # seconds between two chunks of a stream
    backoff_start: float = 1.0
    backoff_max: float = 60.0


@dataclass(frozen=True)
class Upstream:
    """Where a route's calls go: one model's endpoint, with its key and (when the sweep names one) its price."""

    endpoint: str
    api_key: str = ""
    price: Price | None = None
    concurrency: int | None = None  # calls in flight at once the model's endpoint takes (from the sweep file)


@dataclass
class Route:
    """One scenario's way out: where its calls go, what they cost so far, what went wrong."""

    token: str
    sweep: str
    scenario_id: int
    attempt_id: int | None = None
    turn: int = 0
    spent: float = 0.0
    waited: float = 0.0  # seconds of upstream trouble waited out during the current attempt
    unavailable: str = ""  # why the current attempt lost its model (set once, taken by the engine)
    capped: str = ""
    refused: int = 0  # requests for anything but model inference, never forwarded
    upstream: Upstream | None = None  # its model's endpoint; None: the gateway's own


@dataclass
class Call:
    sweep: str
    scenario_id: int
    attempt_id: int | None
    turn: int
    api: str
    model: str
    usage: Usage
    cost: float
    status: int
    seconds: float
    waited: float
    streamed: bool


class Gateway:
    def __init__(
        self,
        endpoint: str,
        api_key: str,
        pricing: dict[str, Price],
        limits: Limits,
        emit: Sink,
        record: Recorder | None = None,
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.api_key = api_key
        self.upstream = Upstream(self.endpoint, api_key)  # for a route given no model's endpoint of its own
        self.pricing, self.limits, self.emit, self.record = pricing, limits, emit, record
        self.routes: dict[str, Route] = {}
        self.by_scenario: dict[int, Route] = {}
        self.sweep_spent = 0.0
        self.unrouted = 0  # requests for no known route
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(limits.first_byte_timeout, connect=10.0), follow_redirects=False, trust_env=False
        )
        self.port: int | None = None

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
        return route

    def begin_attempt(self, route: Route, attempt_id: int, turn: int) -> None:
        """Calls from now on are this attempt's: its waits and model loss start from nothing."""
        route.attempt_id, route.turn, route.waited, route.unavailable = attempt_id, turn, 0.0, ""

    def take_unavailable(self, route: Route) -> str:
        """Why the current attempt lost its model ("" if it did not), cleared as it is read."""
        reason, route.unavailable = route.unavailable, ""
        return reason

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
            async with anyio.create_task_group() as tg:
                for listener in listeners:
                    tg.start_soon(listener.serve, lambda s: serve_connection(s, self.handle))
                task_status.started()
        finally:
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
            return _error(404, "unknown gateway route (each scenario has its own base URL)")
        rest = parts[4] if len(parts) > 4 else ""
        target = upstream_target(request.method, rest)
        if target is None:  # never forwarded: the real key must reach nothing but model inference
            route.refused += 1
            where = f"sweep {route.sweep}, scenario {route.scenario_id}"
            self._log_refusal(route.refused, where, request.method, f"/v1/{rest}", "not model inference")
            return _error(403, f"{request.method} /v1/{rest[:200]} is not forwarded: only model inference ({SUMMARY})")
        refusal = self._over_cap(route)
        if refusal:
            return _error(402, refusal)
        if route.unavailable:  # this attempt already lost its model and will be retried: fail fast, spend nothing
            return _error(503, f"model endpoint unavailable earlier in this attempt: {route.unavailable}")
        api = api_of(target)
        body = with_stream_usage(api, request.body) if request.method == "POST" else b""
        headers = {k: v for k, v in request.headers.items() if k in FORWARD_HEADERS}
        upstream = route.upstream or self.upstream
        # Anthropic's key header for its endpoints (count_tokens too) and for a client that speaks its API.
        if upstream.api_key and (target.startswith("messages") or "anthropic-version" in request.headers):
            headers["x-api-key"] = upstream.api_key
        elif upstream.api_key:  # a local endpoint may need no key at all
            headers["authorization"] = f"Bearer {upstream.api_key}"
        return await self._forward(route, api, request.method, f"{upstream.endpoint}/{target}", headers, body)

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

    # --- forwarding ---------------------------------------------------------------------------

    async def _forward(
        self, route: Route, api: Api, method: str, url: str, headers: dict[str, str], body: bytes
    ) -> Response:
        t0 = time.monotonic()
        waited, delay = 0.0, self.limits.backoff_start
        while True:
            reason, retry_after, upstream = "", None, None
            try:
                upstream = await self.client.send(
                    self.client.build_request(method, url, headers=headers, content=body), stream=True
                )
                if upstream.status_code not in RETRY_STATUSES:
                    break
                reason = f"upstream answered {upstream.status_code}"
                retry_after = _retry_after(upstream.headers.get("retry-after"))
                await upstream.aclose()
            except httpx.TimeoutException:
                reason = "upstream gave no answer in time"
            except httpx.TransportError as exc:
                reason = f"upstream unreachable ({type(exc).__name__})"
            pause = min(retry_after if retry_after is not None else delay, self.limits.backoff_max)
            if waited + pause > self.limits.outage_timeout:
                return self._unavailable(route, f"{reason}; gave up after waiting {waited:.0f} s")
            self.emit(
                LlmWait(
                    scenario=route.scenario_id,
                    turn=route.turn,
                    reason=reason,
                    wait_seconds=round(pause, 2),
                    waited=round(waited, 2),
                )
            )
            await anyio.sleep(pause)  # backoff before retrying the upstream
            waited += pause
            route.waited += pause
            delay = min(delay * 2, self.limits.backoff_max)
        assert upstream is not None
        out_headers = {
            k: v
            for k, v in upstream.headers.items()
            if k.lower() in ("content-type", "x-request-id", "request-id", "openai-processing-ms")
        }
        if "text/event-stream" in upstream.headers.get("content-type", ""):
            return Response(upstream.status_code, out_headers, stream=self._relay(route, api, upstream, t0, waited))
        try:
            data = await _read_all(upstream, self.limits.stream_idle_timeout)
        except (httpx.HTTPError, TimeoutError, ValueError) as exc:
            return self._unavailable(route, f"upstream response broke off: {type(exc).__name__}")
        usage, model = from_body(api, data)
        await self._account(route, api, model, usage, upstream.status_code, t0, waited, streamed=False)
        return Response(upstream.status_code, out_headers, data)

    async def _relay(
        self, route: Route, api: Api, upstream: httpx.Response, t0: float, waited: float
    ) -> AsyncIterator[bytes]:
        meter = StreamMeter(api)
        try:
            async for chunk in _chunks(upstream, self.limits.stream_idle_timeout):
                meter.feed(chunk)
                yield chunk
        except (httpx.HTTPError, TimeoutError) as exc:
            self._unavailable(route, f"stream broke off: {type(exc).__name__}")
            raise StreamBroken() from exc
        finally:
            with anyio.CancelScope(shield=True):
                await upstream.aclose()
                await self._account(
                    route, api, meter.model, meter.usage, upstream.status_code, t0, waited, streamed=True
                )

    async def _account(
        self, route: Route, api: Api, model: str, usage: Usage, status: int, t0: float, waited: float, streamed: bool
    ) -> None:
        own = route.upstream.price if route.upstream is not None else None
        price = own if own is not None else price_for(self.pricing, model)
        spent = cost(usage, price)
        route.spent += spent
        self.sweep_spent += spent
        call = Call(
            sweep=route.sweep,
            scenario_id=route.scenario_id,
            attempt_id=route.attempt_id,
            turn=route.turn,
            api=api,
            model=model,
            usage=usage,
            cost=spent,
            status=status,
            seconds=time.monotonic() - t0,
            waited=waited,
            streamed=streamed,
        )
        if self.record is not None:
            await self.record(call)
        self.emit(
            LlmCall(
                scenario=route.scenario_id,
                turn=route.turn,
                model=model,
                input=usage.input,
                output=usage.output,
                cached=usage.cached,
                cost=round(spent, 6),
                status=status,
            )
        )

    def _unavailable(self, route: Route, reason: str) -> Response:
        route.unavailable = route.unavailable or reason
        self.emit(LlmUnavailable(scenario=route.scenario_id, turn=route.turn, reason=reason))
        return _error(503, f"model endpoint unavailable: {reason}")


class StreamBroken(Exception):
    """The upstream stream ended abnormally; the client's connection is closed without a clean end."""


def _error(status: int, message: str) -> Response:
    body = json.dumps({"error": {"message": f"staminabench gateway: {message}", "type": "gateway_error"}})
    return Response(status, {"content-type": "application/json"}, body.encode())


def _retry_after(value: str | None) -> float | None:
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:
        return None


async def _chunks(upstream: httpx.Response, idle: float) -> AsyncIterator[bytes]:
    """The upstream body as it arrives; TimeoutError when it goes silent for `idle` seconds."""
    chunks = upstream.aiter_bytes().__aiter__()
    while True:
        try:
            with anyio.fail_after(idle):
                chunk = await chunks.__anext__()
        except StopAsyncIteration:
            return
        yield chunk


async def _read_all(upstream: httpx.Response, idle: float) -> bytes:
    data = bytearray()
    try:
        async for chunk in _chunks(upstream, idle):
            data += chunk
            if len(data) > MAX_RESPONSE:
                raise ValueError("response too large")
    finally:
        await upstream.aclose()
    return bytes(data)


__all__ = ["Call", "Gateway", "Limits", "Route", "StreamBroken", "Upstream"]
