"""One control-socket connection: versioned hello, then requests and replies, or an event stream.

Every read and write is bounded: a client that never says hello, sends nothing for the daemon's
idle timeout after it (a live client pings), sends an oversized frame, or stops reading its events
is disconnected; garbage gets an error reply. Nothing here can stall or crash the daemon.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, assert_never

import anyio
import msgspec
from anyio.abc import ByteStream

from protocol import (
    PROTOCOL_VERSION,
    Cancel,
    ErrorReply,
    Event,
    FrameError,
    FrameReader,
    GetAttempt,
    GetCodeChange,
    GetOps,
    GetScenario,
    GetSweep,
    Hello,
    HelloReply,
    ListScenarios,
    ListSweeps,
    Ok,
    OpsReport,
    Pause,
    Ping,
    Reply,
    Request,
    RequestId,
    Resume,
    RetryScenario,
    Stop,
    Submit,
    Subscribe,
    SweepInfo,
    SweepList,
    decoder,
    encoder,
    write_frame,
)
from protocol.errors import ExpectedError, UsageError, one_line
from protocol.events import KIND_NAMES
from protocol.messages import answer_to
from staminad.bench.seeds import MAX_SEED
from staminad.daemon import views
from staminad.daemon.logs import log

if TYPE_CHECKING:
    from staminad.daemon.bus import EventBus
    from staminad.engine.fair import FairLimiter
    from state.store import Store

VERSION = "staminad/0.1"  # what the daemon says in its HelloReply
HELLO_TIMEOUT = 10.0
IDLE_TIMEOUT = 300.0  # seconds a request connection may stay silent; clients ping well within it
SEND_TIMEOUT = 10.0
MAX_ID = 2**63 - 1  # the largest id SQLite stores (an INTEGER is 8 bytes); ids start at 1
_CLOSED = (
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    ConnectionError,
)


class Daemon(Protocol):
    """What a connection asks of the daemon (`service.Daemon`): declared here, so neither module imports the other
    at run time and the service can be read as the one thing that starts connections."""

    idle_timeout: float
    store: Store | None
    bus: EventBus
    limiter: FairLimiter

    def stop(self, drain: bool = False) -> None: ...
    async def submit(
        self, toml_text: str, base_dir: str, source: str = "", force_new: bool = False, paused: bool = False
    ) -> str: ...
    def with_slots(self, info: SweepInfo) -> SweepInfo: ...
    async def sweep_ids(self) -> list[str]: ...
    async def retry_scenario(self, sweep_id: str, configuration: str, seed: int) -> str: ...
    async def cancel(self, sweep_id: str) -> None: ...
    async def pause(self, sweep_id: str, paused: bool) -> None: ...
    async def ops_report(self, history: int) -> OpsReport: ...


async def serve_client(daemon: Daemon, stream: ByteStream) -> None:
    enc, rid_only = encoder(), msgspec.msgpack.Decoder(RequestId)
    dec: msgspec.msgpack.Decoder[Request] = decoder(Request)
    frames = FrameReader(stream)

    async def send(message: Reply | Event, rid: int = 0) -> None:
        if isinstance(message, ErrorReply):  # in one line whatever text of the client's it quotes
            message = msgspec.structs.replace(message, message=one_line(message.message))
        await write_frame(
            stream, enc.encode(msgspec.structs.replace(message, rid=rid) if rid else message), SEND_TIMEOUT
        )

    def number(body: bytes) -> int:
        """The request's number even when the request itself does not decode (0 if there is none)."""
        try:
            return rid_only.decode(body).rid
        except (msgspec.DecodeError, msgspec.ValidationError):
            return 0

    async with stream:
        try:
            with anyio.fail_after(HELLO_TIMEOUT):
                body = await frames.read()
            hello = dec.decode(body)  # garbage instead of a hello closes the connection
            if not isinstance(hello, Hello) or hello.version != PROTOCOL_VERSION:
                await send(ErrorReply(message=f"expected hello with protocol version {PROTOCOL_VERSION}"), number(body))
                return
            await send(HelloReply(version=PROTOCOL_VERSION, daemon=VERSION), hello.rid)
            while True:
                with anyio.fail_after(daemon.idle_timeout):
                    body = await frames.read()
                try:
                    request = dec.decode(body)
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    await send(ErrorReply(message=f"bad request: {exc}", usage=True), number(body))
                    continue
                refusal = _refusal(request)
                if refusal is not None:  # the request's own fault: the client's exit status 2
                    await send(ErrorReply(message=refusal, usage=True), request.rid)
                    continue
                if isinstance(request, Subscribe):
                    await _stream_events(daemon, request, send, stream)
                    return
                await send(await _answer(daemon, request), request.rid)
                if isinstance(request, Stop):
                    daemon.stop(request.drain)
        except FrameError as exc:
            with anyio.move_on_after(1), contextlib.suppress(Exception):
                await send(ErrorReply(message=str(exc)))
        except (TimeoutError, msgspec.DecodeError, msgspec.ValidationError, *_CLOSED):
            return
        except Exception as exc:  # noqa: BLE001 - a bug in handling one client must never take the daemon down
            print(f"staminad: dropped a client after {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)


async def _answer(daemon: Daemon, request: Request) -> Reply:  # noqa: C901 - one case per request type (a match over the request union)
    """The reply to one request: each written through `answer_to`, so mypy checks it is the type its request
    declares (or an `ErrorReply`)."""
    store = daemon.store
    assert store is not None
    try:
        match request:
            case Submit(sweep_toml=text, base_dir=base, source=source, force_new=force_new, paused=paused):
                return answer_to(request)(Ok(detail=await daemon.submit(text, base, source, force_new, paused)))
            case ListSweeps():
                infos = [daemon.with_slots(info) for info in await views.sweep_infos(store)]
                listed = SweepList(sweeps=tuple(infos), limit=daemon.limiter.total, active=daemon.limiter.in_use)
                return answer_to(request)(listed)
            case GetSweep(sweep=name):
                return answer_to(request)(daemon.with_slots(await views.sweep_info(store, name)))
            case ListScenarios(sweep=name):
                return answer_to(request)(await views.scenario_list(store, name, daemon.bus.seq))
            case GetScenario(sweep=name, configuration=config, seed=seed):
                return answer_to(request)(await views.scenario_info(store, name, config, seed))
            case GetAttempt(attempt_id=attempt_id):
                return answer_to(request)(await views.attempt_texts(store, attempt_id))
            case GetCodeChange(attempt_id=attempt_id):
                return answer_to(request)(await views.code_change(store, attempt_id))
            case RetryScenario(sweep=name, configuration=config, seed=seed):
                return answer_to(request)(Ok(detail=await daemon.retry_scenario(name, config, seed)))
            case Cancel(sweep=name):
                await daemon.cancel(name)
                return answer_to(request)(Ok(detail=f"cancelled {name}"))
            case Pause(sweep=name):
                await daemon.pause(name, True)
                return answer_to(request)(Ok(detail=f"paused {name}"))
            case Resume(sweep=name):
                await daemon.pause(name, False)
                return answer_to(request)(Ok(detail=f"resumed {name}"))
            case Stop(drain=drain):  # the caller stops the daemon once this reply is sent
                return answer_to(request)(Ok(detail="stopping" + (" after running attempts finish" if drain else "")))
            case Ping():
                return answer_to(request)(Ok(detail="pong"))
            case GetOps(history=history):
                return answer_to(request)(await daemon.ops_report(history))
            case Hello():
                return ErrorReply(message="already said hello", usage=True)
            case Subscribe():  # `serve` streams events instead of asking for one answer
                return ErrorReply(message="subscribe opens an event stream on its own connection", usage=True)
            case _:
                assert_never(request)
    except ExpectedError as exc:  # a failure the user can fix (a bad sweep, an unknown name): one line
        log.info("request %s refused: %s", type(request).__name__, one_line(str(exc)))
        return ErrorReply(message=str(exc), usage=exc.exit_status == UsageError.exit_status)
    except Exception as exc:  # noqa: BLE001 - a bug answering one request: the client gets one line, the log the traceback
        log.exception("request %s failed", type(request).__name__)
        return ErrorReply(
            message=f"staminad could not answer {type(request).__name__}: {type(exc).__name__}: {exc}"
            " (the daemon's log has the traceback)"
        )


def _refusal(request: Request) -> str | None:
    """Why a well-formed request cannot be served as asked, or None: checked before it reaches the store.

    An id or seed the store could not hold (SQLite's integers are 8 bytes) would fail inside the query as the
    daemon's fault; a relative `base_dir` would be resolved against the daemon's working directory, not the
    client's; an unknown event kind would silently match nothing. A subscription's sweeps are not checked:
    subscribing before submitting is how a client sees a sweep's first event.
    """
    match request:
        case GetAttempt(attempt_id=attempt_id) | GetCodeChange(attempt_id=attempt_id) if not 1 <= attempt_id <= MAX_ID:
            return f"no attempt {attempt_id}: attempt ids are 1..{MAX_ID}"
        case GetScenario(seed=seed) | RetryScenario(seed=seed) if not 0 <= seed <= MAX_SEED:
            return f"no scenario with seed {seed}: seeds are 0..{MAX_SEED}"
        case Submit(base_dir=base) if base and not Path(base).is_absolute():
            return f"base_dir {base!r} is relative; send the sweep file's directory as an absolute path"
        case Subscribe(kinds=kinds) if unknown := sorted(set(kinds) - KIND_NAMES):
            return f"unknown event kind {', '.join(unknown)}; known: {', '.join(sorted(KIND_NAMES))}"
        case GetOps(history=history) if history < 0:
            return f"history {history} is negative; ask for 0 or more points"
        case Subscribe(replay=replay) if replay < 0:
            return f"replay {replay} is negative; ask for 0 or more recent events"
    return None


async def _stream_events(
    daemon: Daemon, request: Subscribe, send: Callable[[Reply | Event, int], Awaitable[None]], stream: ByteStream
) -> None:
    """Stream the subscription's events until the client goes: its end closed is seen at once (`_until_closed`),
    not at the next event's failed write, which on a quiet sweep may be hours away."""
    sub = daemon.bus.subscribe(request.sweeps, request.kinds)
    # Taken in the same step as subscribing, so the replay and the live stream meet without a gap.
    backlog = [e for e in daemon.bus.recent if sub.wants(e)][-request.replay :] if request.replay > 0 else []
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_until_closed, stream, tg.cancel_scope)
            try:
                await send(Ok(detail="subscribed"), request.rid)
                for event in backlog:
                    await send(event, 0)
                async with sub.receive:
                    async for event in sub.receive:
                        await send(event, 0)
            except (TimeoutError, *_CLOSED):
                pass  # a client that stopped reading, or whose end is gone: nothing left to tell it
            tg.cancel_scope.cancel()
    finally:
        daemon.bus.unsubscribe(sub)


async def _until_closed(stream: ByteStream, scope: anyio.CancelScope) -> None:
    """Wait for the subscribed client to close its end (what it sends meanwhile is dropped: it has nothing more to
    ask), then end its stream."""
    with contextlib.suppress(*_CLOSED):
        while await stream.receive():
            pass
    scope.cancel()
