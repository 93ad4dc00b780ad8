"""Forwarding one request to its model's endpoint: the half of `Gateway` (see `proxy`) past the route checks.

It waits out upstream trouble that provably did not reach the model (backoff, Retry-After, `llm_wait`),
gives up on a request the upstream may still be processing (`llm_unavailable`), relays streams chunk by
chunk under an idle timeout, notes context refusals on the route, and accounts every call: tokens
(estimated where the provider reports none), cost against the route and the sweep, the endpoint's
stats, the recorded `Call` and its `llm_call` event.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

import anyio
import httpx

from protocol.events import LlmCall, LlmUnavailable, LlmWait
from staminad.gateway.errors import context_refusal, is_context_error
from staminad.gateway.http import Response
from staminad.gateway.limit import EndpointLimiter
from staminad.gateway.pricing import Price, cost, price_for
from staminad.gateway.routes import Call, Limits, Recorder, Route, Sink
from staminad.gateway.stats import EndpointStats
from staminad.gateway.usage import Api, StreamMeter, Usage, estimate, from_body

# Answers that say the request was not (or not wholly) processed: sent again after a pause. Not 504: a
# proxy in front of the model gave up waiting, and the model may still be working on it.
RETRY_STATUSES = frozenset((408, 409, 425, 429, 500, 502, 503, 529))
MAX_RESPONSE = 64 * 1024 * 1024

log = logging.getLogger(__name__)


class Forwarder:
    """The forwarding and accounting `Gateway` inherits; it holds the state below and picks each route's limiter."""

    limits: Limits
    emit: Sink
    record: Recorder | None
    pricing: dict[str, Price]
    client: httpx.AsyncClient
    stats: EndpointStats
    sweep_spent: float
    _unpriced: set[str]

    def limiter_for(self, route: Route) -> EndpointLimiter:
        raise NotImplementedError

    async def _forward(
        self, route: Route, asked: Asked, method: str, url: str, headers: dict[str, str], body: bytes
    ) -> Response:
        t0 = time.monotonic()
        self.stats.in_flight += 1
        try:
            return await self._forward_counted(route, asked, method, url, headers, body, t0)
        finally:
            self.stats.in_flight -= 1  # a stream is still relayed after this: `_relay` counts itself

    async def _forward_counted(
        self, route: Route, asked: Asked, method: str, url: str, headers: dict[str, str], body: bytes, t0: float
    ) -> Response:
        waited, delay = 0.0, self.limits.backoff_start
        limiter = self.limiter_for(route)
        api = asked.api
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
                await self._abandoned(route, asked, estimate(asked.sent, 0), 0, t0, waited)
                return self._unavailable(route, f"upstream {lost}; not sent again, it may still be processing it")
            except BaseException:  # cancelled (the sweep stopped, the attempt ended) with the request out
                limiter.release()
                if upstream is None:  # else an overload answer was being closed: nothing was billed
                    with anyio.CancelScope(shield=True):
                        await self._abandoned(route, asked, estimate(asked.sent, 0), 0, t0, waited)
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
            stream = self._relay(route, asked, upstream, t0, waited)
            await anext(stream)  # started, so that closing it (the server always does) releases its slot
            return Response(upstream.status_code, out_headers, stream=stream)
        data = bytearray()
        try:
            await _read_all(upstream, self.limits.stream_idle_timeout, data)
        except (httpx.HTTPError, TimeoutError, ValueError) as exc:
            self.stats.error("broken")
            await self._abandoned(route, asked, estimate(asked.sent, len(data)), upstream.status_code, t0, waited)
            return self._unavailable(route, f"upstream response broke off: {type(exc).__name__}")
        except BaseException:  # cancelled while the answer came in: billed all the same
            with anyio.CancelScope(shield=True):
                usage = estimate(asked.sent, len(data))
                await self._abandoned(route, asked, usage, upstream.status_code, t0, waited)
            raise
        finally:
            limiter.release()
        if refusal := context_refusal(upstream.status_code, bytes(data)):
            self._exhausted(route, refusal)
        usage, model = from_body(api, bytes(data))
        self.stats.first_token.observe(time.monotonic() - t0)  # whole answers: the first token came with the rest
        if not usage.reported and upstream.is_success and api != "other":  # listings, counts: free
            usage = estimate(asked.sent, len(data))
        await self._account(route, asked, model or asked.requested, usage, upstream.status_code, t0, waited)
        return Response(upstream.status_code, out_headers, bytes(data))

    async def _abandoned(
        self, route: Route, asked: Asked, usage: Usage, status: int, t0: float, waited: float, streamed: bool = False
    ) -> None:
        """Meter a call the upstream got but nobody saw through (it gave no answer in time, broke off, or the
        attempt ended first): the endpoint may bill it, so it is counted, estimated where it reported nothing."""
        if asked.api == "other":  # listings, counts: free
            return
        await self._account(route, asked, asked.requested, usage, status, t0, waited, streamed, abandoned=True)

    async def _relay(
        self, route: Route, asked: Asked, upstream: httpx.Response, t0: float, waited: float
    ) -> AsyncGenerator[bytes]:
        api = asked.api
        meter = StreamMeter(api)
        first, ended = True, False
        self.stats.in_flight += 1
        try:
            yield b""  # the priming step (an empty chunk is not sent)
            async for chunk in _chunks(upstream, self.limits.stream_idle_timeout):
                if first:
                    self.stats.first_token.observe(time.monotonic() - t0)
                    first = False
                meter.feed(chunk)
                yield chunk
            ended = True
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
                    usage = estimate(asked.sent, meter.size)
                elif not ended and not usage.output and api != "other":  # cut before its closing usage: guessed
                    usage = Usage(usage.input, meter.size // 4, usage.cached, estimated=True)
                model = meter.model or asked.requested
                status = upstream.status_code
                await self._account(route, asked, model, usage, status, t0, waited, True, abandoned=not ended)

    def _exhausted(self, route: Route, words: str) -> None:
        """A call was over the model's context window: the harness hears it; the engine judges what follows."""
        if not route.exhausted:
            where = f"scenario {route.scenario_id}, turn {route.turn}"
            log.info("%s: a call was over the model's context window: %.300s", where, words)
        route.exhausted = route.exhausted or words

    async def _account(
        self,
        route: Route,
        asked: Asked,
        model: str,
        usage: Usage,
        status: int,
        t0: float,
        waited: float,
        streamed: bool = False,
        abandoned: bool = False,
    ) -> None:
        # A server may name its model otherwise than the request did (a local path, a provider prefix).
        own = route.upstream.price if route.upstream is not None else None
        price = own if own is not None else price_for(self.pricing, model) or price_for(self.pricing, asked.requested)
        if price is None and model not in self._unpriced:  # counted in tokens and marked unpriced in every view
            self._unpriced.add(model)
            log.warning("gateway: model %.200r has no price in [llm.pricing]: its calls are recorded unpriced", model)
        spent = cost(usage, price)
        route.spent += spent
        self.sweep_spent += spent
        stats = self.stats
        stats.spent = self.sweep_spent
        stats.tokens_in, stats.tokens_out = stats.tokens_in + usage.input, stats.tokens_out + usage.output
        stats.tokens_cached += usage.cached
        for basis, counted in (("estimated", usage.estimated), ("unpriced", price is None), ("abandoned", abandoned)):
            stats.flagged[basis] = stats.flagged.get(basis, 0) + counted
        stats.responses[status] = stats.responses.get(status, 0) + 1
        stats.latency.observe(time.monotonic() - t0)
        call = Call(
            sweep=route.sweep,
            scenario_id=route.scenario_id,
            attempt_id=route.attempt_id,
            turn=route.turn,
            api=asked.api,
            model=model,
            usage=usage,
            cost=spent,
            status=status,
            seconds=time.monotonic() - t0,
            waited=waited,
            streamed=streamed,
            estimated=usage.estimated,
            unpriced=price is None,
            abandoned=abandoned,
            compaction=asked.compaction,
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
                estimated=usage.estimated,
                unpriced=price is None,
                abandoned=abandoned,
            )
        )

    def _unavailable(self, route: Route, reason: str) -> Response:
        route.unavailable = route.unavailable or reason
        self.emit(LlmUnavailable(scenario=route.scenario_id, turn=route.turn, reason=reason))
        return gateway_error(503, f"model endpoint unavailable: {reason}")


@dataclass(frozen=True)
class Asked:
    """What a request asked for, as its accounting needs it."""

    api: Api
    requested: str  # the model the request names ('' when none): the price of a call whose answer does not say
    sent: int  # bytes of the request body (an estimate's input when the provider reports nothing)
    compaction: bool = False  # the harness said (COMPACTION_HEADER) that this call summarises its context


class StreamBroken(Exception):
    """The upstream stream ended abnormally; the client's connection is closed without a clean end."""


def gateway_error(status: int, message: str) -> Response:
    body = json.dumps({"error": {"message": f"staminabench gateway: {message}", "type": "gateway_error"}})
    return Response(status, {"content-type": "application/json"}, body.encode())


def model_of(body: bytes) -> str:
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


async def _read_all(upstream: httpx.Response, idle: float, data: bytearray) -> None:
    """The whole answer into `data` (what came before a failure stays there, for the estimate)."""
    try:
        async for chunk in _chunks(upstream, idle):
            data += chunk
            if len(data) > MAX_RESPONSE:
                raise ValueError("response too large")
    finally:
        with anyio.CancelScope(shield=True):
            await upstream.aclose()


__all__ = ["Asked", "Forwarder", "StreamBroken", "gateway_error", "model_of"]
