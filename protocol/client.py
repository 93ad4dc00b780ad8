"""A control-socket client for the CLI, the TUI and tests: hello, then requests and replies, or an event stream.

It lives beside the messages so a client (the TUI) needs nothing from the daemon's own packages.

One reader task per connection reads every frame and hands each reply to the request carrying the
same number (`rid`); events go to `events()`. A request that is cancelled or times out only stops
waiting: its reply, when it comes, is recognised and dropped, so replies never shift. The reader ends
when the connection closes, never in the middle of a frame (see `protocol.stream` for why the socket
is not anyio's own). An idle request connection pings every `keepalive` seconds, so the daemon's
idle timeout drops only clients that are gone or stuck, never a monitor that is just watching.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TypeVar

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from protocol.framing import FrameError, FrameReader
from protocol.framing import write_frame as _write
from protocol.messages import (
    PROTOCOL_VERSION,
    ErrorReply,
    Event,
    Hello,
    HelloReply,
    Message,
    Ping,
    Reply,
    RequestFor,
    Subscribe,
    decoder,
    encoder,
    is_answer,
)
from protocol.stream import UnixStream, connect_unix
from protocol.usage import hint

R = TypeVar("R", bound=Message)

TIMEOUT = 30.0
KEEPALIVE = 60.0  # seconds of silence before an idle request connection pings (the daemon waits 300)
EVENT_BUFFER = 1000  # events read ahead of the consumer; beyond that the reader waits for it
_CLOSED = (
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    ConnectionError,
)


class ClientError(RuntimeError):
    """The daemon is not reachable or refused the request; the message says which in one line."""


class _Pending:
    def __init__(self) -> None:
        self.done = anyio.Event()
        self.reply: Reply | None = None


class Client:
    def __init__(
        self,
        socket_path: Path,
        name: str = "staminad-cli",
        timeout: float = TIMEOUT,
        keepalive: float | None = KEEPALIVE,
    ) -> None:
        self.path, self.name, self.timeout, self.keepalive = socket_path, name, timeout, keepalive
        self._sent = 0.0  # when the last request went out (anyio's clock)
        self._subscribed = False  # an event stream: the daemon no longer reads, so no pings
        self.enc = encoder()
        self.dec: msgspec.msgpack.Decoder[Reply | Event] = decoder(Reply | Event)
        self.stream: UnixStream | None = None
        self.frames: FrameReader | None = None
        self.daemon = ""  # the daemon's version, from its hello
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._writing = anyio.Lock()
        self._broken = ""  # why the connection ended, once it has
        self._tg: anyio.abc.TaskGroup | None = None
        self._events_in: MemoryObjectSendStream[Event | ErrorReply]
        self._events_out: MemoryObjectReceiveStream[Event | ErrorReply]
        self._events_in, self._events_out = anyio.create_memory_object_stream[Event | ErrorReply](EVENT_BUFFER)

    async def __aenter__(self) -> Client:
        try:
            with anyio.fail_after(self.timeout):
                self.stream = await connect_unix(self.path)
        except BaseException as exc:
            self._close_events()  # no reader started to close them: a client that never connected leaves none open
            if isinstance(exc, FileNotFoundError | ConnectionRefusedError):
                raise ClientError(
                    f"staminad is not running (no daemon at {self.path}); start it with `{hint('start')}`"
                ) from None
            if isinstance(exc, PermissionError):
                raise ClientError(f"no permission to use {self.path}") from None
            if isinstance(exc, TimeoutError):
                raise ClientError(f"the daemon at {self.path} did not accept within {self.timeout:.0f} s") from None
            raise
        self.frames = FrameReader(self.stream)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._read_all)
        try:
            reply = await self.request(Hello(version=PROTOCOL_VERSION, client=self.name))
            if not isinstance(reply, HelloReply):
                raise ClientError(f"daemon refused the connection: {getattr(reply, 'message', reply)}")
        except BaseException:
            await self._close()
            raise
        self.daemon = reply.daemon
        if self.keepalive:
            self._tg.start_soon(self._keep_alive, self.keepalive)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._close()

    async def _close(self) -> None:
        # Closing the socket ends the reader's read without cancelling it (see the module docstring).
        with anyio.CancelScope(shield=True):
            self._close_events()
            if self.stream is not None:
                await self.stream.aclose()
        if self._tg is not None:  # the reader is shielded: it ends because the socket closed, not by a cancel
            tg, self._tg = self._tg, None
            tg.cancel_scope.cancel()  # the keep-alive task
            await tg.__aexit__(None, None, None)

    def _close_events(self) -> None:
        """Close both ends of the event stream (the reader closes its sending end too, when it ends): idempotent."""
        self._events_in.close()
        self._events_out.close()

    async def _keep_alive(self, every: float) -> None:
        while not self._broken and not self._subscribed:
            await anyio.sleep(max(self._sent + every - anyio.current_time(), 0.01))  # a timer, not synchronisation
            if anyio.current_time() - self._sent >= every and not self._subscribed:
                with contextlib.suppress(ClientError):  # a slow answer is no reason to stop
                    await self.request(Ping())

    async def _read_all(self) -> None:
        assert self.frames is not None
        with anyio.CancelScope(shield=True):  # ends when the connection closes, never mid-read
            try:
                while True:
                    message = self.dec.decode(await self.frames.read())
                    if isinstance(message, Event):
                        await self._events_in.send(message)
                    elif message.rid in self._pending:
                        pending = self._pending.pop(message.rid)
                        pending.reply = message
                        pending.done.set()
                    elif isinstance(message, ErrorReply) and message.rid == 0:
                        self._broken = message.message  # the daemon could not tell which request it answers
                        return
                    # otherwise the answer to a request whose caller stopped waiting: not anyone's now
            except _CLOSED:
                self._broken = self._broken or "the daemon closed the connection"
            except (FrameError, msgspec.DecodeError, msgspec.ValidationError) as exc:
                self._broken = f"unreadable message from the daemon: {exc}"
            finally:
                for pending in self._pending.values():
                    pending.done.set()
                self._events_in.close()

    async def request(self, message: RequestFor[R]) -> R | ErrorReply:
        """Send `message` numbered, and return the reply carrying its number: the type the request declares, or
        an `ErrorReply` (any other answer is the daemon's fault, a `ClientError`)."""
        assert self.stream is not None
        if self._broken:
            raise ClientError(self._broken)
        rid = next(self._ids)
        pending = self._pending[rid] = _Pending()
        self._sent = anyio.current_time()
        self._subscribed = self._subscribed or isinstance(message, Subscribe)
        try:
            with anyio.fail_after(self.timeout):
                async with self._writing:
                    await _write(self.stream, self.enc.encode(msgspec.structs.replace(message, rid=rid)), self.timeout)
                await pending.done.wait()
        except TimeoutError:
            raise ClientError(f"no answer from the daemon within {self.timeout:.0f} s") from None
        except _CLOSED:
            raise ClientError(self._broken or "the daemon closed the connection") from None
        finally:
            self._pending.pop(rid, None)
        reply = pending.reply
        if reply is None:
            raise ClientError(self._broken or "the daemon closed the connection")
        if isinstance(reply, ErrorReply):
            return reply
        if is_answer(reply, message):
            return reply
        raise ClientError(f"the daemon answered {type(message).__name__} with {type(reply).__name__}")

    async def events(self) -> AsyncIterator[Event]:
        """The events the daemon streams after a `Subscribe`; ends when the connection does."""
        try:
            async for message in self._events_out:
                if isinstance(message, ErrorReply):
                    raise ClientError(message.message)
                yield message
        except anyio.ClosedResourceError:
            return
        if self._broken and self._broken != "the daemon closed the connection":
            raise ClientError(self._broken)


__all__ = ["Client", "ClientError"]
