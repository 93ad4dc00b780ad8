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
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import secrets
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx

from protocol.errors import UsageError
from protocol.events import EventData, LlmCall, LlmCapped, LlmUnavailable, LlmWait
from staminad.gateway.allow import SUMMARY, upstream_target
from staminad.gateway.errors import context_refusal, is_context_error
from staminad.gateway.http import Request, Response, serve_connection
from staminad.gateway.limit import EndpointLimiter, LimiterStats
from staminad.gateway.pricing import Price, cost, price_for
from staminad.gateway.stats import LIVE, EndpointStats
from staminad.gateway.usage import Api, StreamMeter, Usage, api_of, estimate, from_body, with_stream_usage

# Answers that say the request was not (or not wholly) processed: sent again after a pause. Not 504: a
# proxy in front of the model gave up waiting, and the model may still be working on it.
RETRY_STATUSES = frozenset((408, 409, 425, 429, 500, 502, 503, 529))
OVERSIZED_KEPT = 16  # per route: context refusals answered again without reaching the upstream
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
    first_byte_timeout: float = 300.0  # seconds to the response head; past it the attempt lost its model
    stream_idle_timeout: float = 120.0  # seconds between two chunks of a stream
    backoff_start: float = 1.0
    backoff_max: float = 60.0
    concurrency: int = 8  # calls in flight at once per endpoint (the ceiling of the adaptive limit)


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
    waited: float = 0.0  # seconds of upstream trouble waited out (or queued) during the current attempt
    unavailable: str = ""  # why the current attempt lost its model (set once, taken by the engine)
    exhausted: str = ""  # the upstream's words when a call of the current attempt was over the context window
    oversized: dict[bytes, Response] = field(default_factory=dict)  # digest of a refused request -> the refusal
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
    estimated: bool = False  # the provider reported no usage: tokens counted from bytes


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
        self.limiter = EndpointLimiter(self.endpoint, limits.concurrency)  # the gateway's own endpoint's
        self._limiters: dict[str, EndpointLimiter] = {self.endpoint: self.limiter}
        self._unpriced: set[str] = set()
        # No pool bound or pool timeout: the limiter bounds connections, and a queued call is no outage.
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(limits.first_byte_timeout, connect=10.0, pool=None),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=limits.concurrency),
            follow_redirects=False,
            trust_env=False,
        )
        self.port: int | None = None
        self.stats = EndpointStats(endpoint=self.endpoint, cap=limits.sweep_cost_cap)

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
        if limiter is None:
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
        digest = hashlib.sha256(body).digest()
        if (oversized := route.oversized.get(digest)) is not None:  # sent again as it was: it cannot fit now either
            self._exhausted(route, context_refusal(oversized.status, oversized.body))
            return Response(oversized.status, dict(oversized.headers), oversized.body)
        response = await self._forward(route, api, request.method, f"{upstream.endpoint}/{target}", headers, body)
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

    # --- forwarding ---------------------------------------------------------------------------

    async def _forward(
        self, route: Route, api: Api, method: str, url: str, headers: dict[str, str], body: bytes
    ) -> Response:
        t0 = time.monotonic()
        self.stats.in_flight += 1
        try:
            return await self._forward_counted(route, api, method, url, headers, body, t0)
        finally:
            self.stats.in_flight -= 1  # a stream is still relayed after this: `_relay` counts itself

    async def _forward_counted(
        self, route: Route, api: Api, method: str, url: str, headers: dict[str, str], body: bytes, t0: float
    ) -> Response:
        waited, delay = 0.0, self.limits.backoff_start
        limiter = self.limiter_for(route)
        while True:
            queued = await limiter.acquire()
            route.waited += queued  # waiting for the model's turn is the platform's time, never the agent's
            reason, retry_after, upstream = "", None, None
            sent = time.monotonic()
            try:
                upstream = await self.client.send(
                    self.client.build_request(method, url, headers=headers, content=body), stream=True
                )
                limiter.answered(upstream.status_code, time.monotonic() - sent)
                if upstream.status_code not in RETRY_STATUSES:
                    break  # the slot stays held until the answer is read (or relayed)
                reason = f"upstream answered {upstream.status_code}"
                self.stats.error("429" if upstream.status_code == 429 else f"{upstream.status_code // 100}xx")
                retry_after = _retry_after(upstream.headers.get("retry-after"))
                await upstream.aclose()
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # it never reached the upstream
                reason = f"upstream unreachable ({type(exc).__name__})"
                self.stats.error("unreachable")
            except httpx.TransportError as exc:  # the request went out: the upstream may still be processing it
                limiter.release()
                self.stats.error("timeout" if isinstance(exc, httpx.TimeoutException) else "broken")
                lost = (
                    f"no answer within the first-byte timeout of {self.limits.first_byte_timeout:.0f} s"
                    if isinstance(exc, httpx.TimeoutException)
                    else f"connection lost after the request was sent ({type(exc).__name__})"
                )
                return self._unavailable(route, f"upstream {lost}; not sent again, it may still be processing it")
            except BaseException:
                limiter.release()
                raise
            limiter.release()  # nobody holds a slot through a backoff
            jittered = delay * random.uniform(0.5, 1.0)  # spreads retries; no secret
            pause = min(retry_after if retry_after is not None else jittered, self.limits.backoff_max)
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
            self.stats.retrying += 1
            try:
                await anyio.sleep(pause)  # backoff before retrying the upstream
            finally:
                self.stats.retrying -= 1
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
            stream = self._relay(route, api, upstream, t0, waited, len(body), _model_of(body))
            await anext(stream)  # started, so that closing it (the server always does) releases its slot
            return Response(upstream.status_code, out_headers, stream=stream)
        try:
            data = await _read_all(upstream, self.limits.stream_idle_timeout)
        except (httpx.HTTPError, TimeoutError, ValueError) as exc:
            self.stats.error("broken")
            return self._unavailable(route, f"upstream response broke off: {type(exc).__name__}")
        finally:
            limiter.release()
        if refusal := context_refusal(upstream.status_code, data):
            self._exhausted(route, refusal)
        usage, model = from_body(api, data)
        self.stats.first_token.observe(time.monotonic() - t0)  # whole answers: the first token came with the rest
        if not usage.reported and upstream.is_success and api != "other":  # listings, counts: free
            usage = estimate(len(body), len(data))
        requested = _model_of(body)
        await self._account(
            route, api, model or requested, usage, upstream.status_code, t0, waited, streamed=False, requested=requested
        )
        return Response(upstream.status_code, out_headers, data)

    async def _relay(
        self, route: Route, api: Api, upstream: httpx.Response, t0: float, waited: float, sent: int, requested: str
    ) -> AsyncGenerator[bytes]:
        meter = StreamMeter(api)
        first = True
        self.stats.in_flight += 1
        try:
            yield b""  # the priming step (an empty chunk is not sent)
            async for chunk in _chunks(upstream, self.limits.stream_idle_timeout):
                if first:
                    self.stats.first_token.observe(time.monotonic() - t0)
                    first = False
                meter.feed(chunk)
                yield chunk
        except (httpx.HTTPError, TimeoutError) as exc:
            self.stats.error("broken")
            self._unavailable(route, f"stream broke off: {type(exc).__name__}")
            raise StreamBroken() from exc
        finally:
            self.stats.in_flight -= 1
            with anyio.CancelScope(shield=True):
                self.limiter_for(route).release()
                await upstream.aclose()
                if meter.error and is_context_error(meter.error):
                    self._exhausted(route, meter.error)
                elif meter.error:  # the provider failed inside its 200 stream: an outage, not the harness's crash
                    self._unavailable(route, f"provider error inside the stream: {meter.error}")
                usage = meter.usage
                if not usage.reported and upstream.is_success and api != "other":  # listings, counts: free
                    usage = estimate(sent, meter.size)
                model = meter.model or requested
                status = upstream.status_code
                await self._account(route, api, model, usage, status, t0, waited, streamed=True, requested=requested)

    def _exhausted(self, route: Route, words: str) -> None:
        """A call was over the model's context window: the harness hears it; the engine judges what follows."""
        if not route.exhausted:
            where = f"scenario {route.scenario_id}, turn {route.turn}"
            log.info("%s: a call was over the model's context window: %.300s", where, words)
        route.exhausted = route.exhausted or words

    async def _account(
        self,
        route: Route,
        api: Api,
        model: str,
        usage: Usage,
        status: int,
        t0: float,
        waited: float,
        streamed: bool,
        requested: str = "",
    ) -> None:
        # A server may name its model otherwise than the request did (a local path, a provider prefix).
        own = route.upstream.price if route.upstream is not None else None
        price = own if own is not None else price_for(self.pricing, model) or price_for(self.pricing, requested)
        if price is None and model not in self._unpriced:  # counted in tokens, but no cap can see it
            self._unpriced.add(model)
            log.warning("gateway: model %.200r has no price in [llm.pricing]: its calls are recorded at $0", model)
        spent = cost(usage, price)
        route.spent += spent
        self.sweep_spent += spent
        stats = self.stats
        stats.spent = self.sweep_spent
        stats.tokens_in, stats.tokens_out = stats.tokens_in + usage.input, stats.tokens_out + usage.output
        stats.tokens_cached += usage.cached
        stats.responses[status] = stats.responses.get(status, 0) + 1
        stats.latency.observe(time.monotonic() - t0)
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
            estimated=usage.estimated,
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


def _model_of(body: bytes) -> str:
    """The model a request asks for ('' when it names none): the price of a call whose answer does not say."""
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) else ""


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
