"""A control-socket client for the CLI, the TUI and tests: hello, then requests and replies, or an event stream.

It lives beside the messages so a client (the TUI) needs nothing from the daemon's own packages.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from protocol.framing import read_frame
from protocol.framing import write_frame as _write
from protocol.messages import PROTOCOL_VERSION, ErrorReply, Event, Hello, HelloReply, Message, decoder, encoder

TIMEOUT = 30.0


class ClientError(RuntimeError):
    """The daemon is not reachable or refused the request; the message says which in one line."""


class Client:
    def __init__(self, socket_path: Path, name: str = "staminad-cli", timeout: float = TIMEOUT) -> None:
        self.path, self.name, self.timeout = socket_path, name, timeout
        self.enc, self.dec = encoder(), decoder(Message)
        self.stream: anyio.abc.SocketStream | None = None
        self.reader: BufferedByteReceiveStream | None = None
        self.daemon = ""  # the daemon's version, from its hello

    async def __aenter__(self) -> Client:
        try:
            with anyio.fail_after(self.timeout):
                self.stream = await anyio.connect_unix(self.path)
        except (FileNotFoundError, ConnectionRefusedError):
            raise ClientError(f"staminad is not running (no daemon at {self.path}); start it with "
                              "`staminad start`") from None
        except PermissionError:
            raise ClientError(f"no permission to use {self.path}") from None
        self.reader = BufferedByteReceiveStream(self.stream)
        reply = await self.request(Hello(version=PROTOCOL_VERSION, client=self.name))
        if not isinstance(reply, HelloReply):
            raise ClientError(f"daemon refused the connection: {getattr(reply, 'message', reply)}")
        self.daemon = reply.daemon
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.stream is not None:
            await self.stream.aclose()

    async def request(self, message: Any) -> Any:
        assert self.stream is not None and self.reader is not None
        try:
            with anyio.fail_after(self.timeout):
                await _write(self.stream, self.enc.encode(message))
                reply = self.dec.decode(await read_frame(self.reader))
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, ConnectionError):
            raise ClientError("the daemon closed the connection") from None
        except anyio.ClosedResourceError:  # closed on our side while the request waited (a link going down)
            raise ClientError("the connection to the daemon was closed") from None
        except TimeoutError:
            raise ClientError(f"no answer from the daemon within {self.timeout:.0f} s") from None
        return reply

    async def events(self) -> AsyncIterator[Event]:
        assert self.reader is not None
        while True:
            try:
                message = self.dec.decode(await read_frame(self.reader))
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError,
                    ConnectionError):
                return
            if isinstance(message, ErrorReply):
                raise ClientError(message.message)
            if isinstance(message, Event):
                yield message
