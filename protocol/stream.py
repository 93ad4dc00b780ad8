"""Unix-socket byte streams for the control socket, built on asyncio's transports.

anyio's own Unix sockets on asyncio (`connect_unix`, `create_unix_listener`) wait on the raw socket
with `loop.add_reader(sock, future.set_result, None)` and unregister that reader only in a later
callback. A read cancelled in the same loop iteration in which data arrived then has the reader call
`set_result` on a cancelled future: `InvalidStateError: invalid state`, raised in an event-loop callback
(seen as a flaky test on a busy machine, where more events land in one iteration). asyncio's stream
transports check their waiters before resolving them, so cancelling a read or a write here is safe.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteStream, TaskGroup, TaskStatus

BACKLOG = 128  # connections the kernel queues before the daemon accepts them
MAX_CONNECTIONS = 256  # open connections served at once, at most; further ones are refused


def connection_cap(reserve: int = 64) -> int:
    """A cap on open control connections that leaves most of the process's file descriptors to everything else."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(4, min(MAX_CONNECTIONS, (soft - reserve) // 2))


class UnixStream(ByteStream):
    """One connected Unix socket as an anyio byte stream."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer
        self._closed = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            data = await self._reader.read(max_bytes)
        except ConnectionError as exc:
            raise anyio.BrokenResourceError from exc
        if self._closed:
            raise anyio.ClosedResourceError
        if not data:
            raise anyio.EndOfStream
        return data

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._writer.is_closing():
            raise anyio.BrokenResourceError
        try:
            self._writer.write(item)
            await self._writer.drain()
        except ConnectionError as exc:
            raise anyio.BrokenResourceError from exc

    async def send_eof(self) -> None:
        self._writer.write_eof()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._writer.close()  # a pending read sees end of stream (then ClosedResourceError) once the transport closes
        with anyio.CancelScope(shield=True), anyio.move_on_after(1), contextlib.suppress(OSError):
            await self._writer.wait_closed()


async def connect_unix(path: Path) -> UnixStream:
    """Connect to the socket at `path` (FileNotFoundError, ConnectionRefusedError, PermissionError as the OS says)."""
    reader, writer = await asyncio.open_unix_connection(str(path))
    return UnixStream(reader, writer)


async def serve_unix(
    path: Path,
    handler: Callable[[UnixStream], Coroutine[Any, Any, None]],
    tg: TaskGroup,
    max_pending: int = BACKLOG,
    max_connections: int | None = None,
    refusal: bytes = b"",
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on `path` and run `handler` for each connection in `tg` until cancelled.

    At most `max_connections` (default: `connection_cap()`) are open at once, so accepting never runs
    the process out of file descriptors: one beyond that is sent `refusal` and closed at once. Connections
    are handed over through a bounded queue; one arriving while it is full is closed the same way.
    """
    cap = max_connections or connection_cap()
    send, receive = anyio.create_memory_object_stream[UnixStream](max_pending)
    live = 0

    def refuse(writer: asyncio.StreamWriter) -> None:
        if refusal:
            writer.write(refusal)  # buffered by the transport; closing flushes it without waiting on the peer
        writer.close()

    def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal live
        if live >= cap:
            refuse(writer)
            return
        try:
            send.send_nowait(UnixStream(reader, writer))
        except anyio.WouldBlock:
            refuse(writer)
            return
        live += 1

    async def serve_one(stream: UnixStream) -> None:
        nonlocal live
        try:
            await handler(stream)
        finally:
            live -= 1
            await stream.aclose()  # the handler's own close may have been skipped by a cancel

    server = await asyncio.start_unix_server(accepted, path=str(path), backlog=BACKLOG)
    try:
        task_status.started()
        async with receive:
            async for stream in receive:
                tg.start_soon(serve_one, stream)
    finally:
        server.close()
        send.close()


__all__ = ["MAX_CONNECTIONS", "UnixStream", "connect_unix", "connection_cap", "serve_unix"]
