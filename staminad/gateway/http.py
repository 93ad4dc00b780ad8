"""A small HTTP/1.1 server on anyio and h11: requests with bounded bodies, whole or streamed responses.

Only what the gateway needs: keep-alive, Content-Length or chunked request bodies up to a limit, and
responses either whole or as an async iterator of chunks (sent chunked, so a stream reaches the client
as it arrives). Every read is bounded by an idle timeout; a malformed request gets a 400 and a close.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import h11
from anyio.abc import SocketStream

MAX_BODY = 32 * 1024 * 1024
IDLE = 120.0  # seconds a connection may sit between requests or mid-request


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Response:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    stream: AsyncIterator[bytes] | None = None  # sent chunked when set; `body` is ignored then


Handler = Callable[[Request], Awaitable[Response]]


async def serve_connection(stream: SocketStream, handler: Handler) -> None:
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
    async with stream:
        while True:
            try:
                request = await _read_request(stream, conn)
            except (h11.RemoteProtocolError, ValueError) as exc:
                with contextlib.suppress(Exception):
                    await _send_whole(
                        stream,
                        conn,
                        Response(400, {"content-type": "text/plain"}, f"bad request: {exc}\n".encode()),
                        close=True,
                    )
                return
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
                return
            if request is None:
                return
            try:
                response = await handler(request)
            except Exception as exc:  # noqa: BLE001 - a handler bug answers 500; it never takes the server down
                response = Response(500, {"content-type": "text/plain"}, f"internal error: {exc}\n".encode())
            try:
                if response.stream is None:
                    await _send_whole(stream, conn, response)
                else:
                    await _send_stream(stream, conn, response)
            except Exception:  # noqa: BLE001 - the client went away, or the stream broke off: close without a clean end
                return
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()


async def _read_request(stream: SocketStream, conn: h11.Connection) -> Request | None:
    head: h11.Request | None = None
    body = bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            with anyio.fail_after(IDLE):
                try:
                    data = await stream.receive(65536)
                except anyio.EndOfStream:
                    data = b""
            conn.receive_data(data)
            continue
        if isinstance(event, h11.ConnectionClosed):
            return None
        if isinstance(event, h11.Request):
            head = event
        elif isinstance(event, h11.Data):
            body += event.data
            if len(body) > MAX_BODY:
                raise ValueError(f"body over {MAX_BODY} bytes")
        elif isinstance(event, h11.EndOfMessage):
            assert head is not None
            headers = {k.decode().lower(): v.decode("latin-1") for k, v in head.headers}
            return Request(head.method.decode(), head.target.decode("latin-1"), headers, bytes(body))


def _head(response: Response, chunked: bool) -> h11.Response:
    headers = [
        (k, v)
        for k, v in response.headers.items()
        if k.lower() not in ("content-length", "transfer-encoding", "connection")
    ]
    if chunked:
        headers.append(("transfer-encoding", "chunked"))
    else:
        headers.append(("content-length", str(len(response.body))))
    return h11.Response(status_code=response.status, headers=headers)


async def _send(stream: SocketStream, conn: h11.Connection, event: h11.Event) -> None:
    data = conn.send(event)
    if data:
        with anyio.fail_after(IDLE):
            await stream.send(data)


async def _send_whole(stream: SocketStream, conn: h11.Connection, response: Response, close: bool = False) -> None:
    if close:
        response.headers["connection"] = "close"
    await _send(stream, conn, _head(response, chunked=False))
    if response.body:
        await _send(stream, conn, h11.Data(data=response.body))
    await _send(stream, conn, h11.EndOfMessage())


async def _send_stream(stream: SocketStream, conn: h11.Connection, response: Response) -> None:
    assert response.stream is not None
    try:
        await _send(stream, conn, _head(response, chunked=True))
        async for chunk in response.stream:
            if chunk:
                await _send(stream, conn, h11.Data(data=chunk))
        await _send(stream, conn, h11.EndOfMessage())
    finally:  # closed now, also when the client went away: what it holds upstream is given back at once
        aclose = getattr(response.stream, "aclose", None)
        if aclose is not None:
            with anyio.CancelScope(shield=True):
                await aclose()


__all__ = ["Handler", "Request", "Response", "serve_connection"]
