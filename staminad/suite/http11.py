"""A minimal HTTP/1.1 keep-alive client for suites: one connection per server, one request at a time.

Why not httpx here: measured on this project's machines, an httpx request costs ~900 us of client
CPU, this client ~100-150 us (`benchmarks/bench_suite.py`). The daemon tests dozens of servers at
once, so client CPU is what bounds throughput. It handles exactly what a suite needs, strictly and
with bounds: Content-Length, chunked and close-delimited bodies, a response-size cap, a timeout on
every request, no redirects, and one transparent reconnect when a kept-alive connection turns out
to be closed before any response byte arrived.
"""

from __future__ import annotations

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from staminad.suite.runner import MAX_RESPONSE_BYTES, TransportError

_MAX_HEAD = 64 * 1024
_NO_BODY = {204, 304}


class _Closed(Exception):
    """The kept-alive connection was closed before the response started."""


class Http11Transport:
    """`Transport` over one kept-alive TCP connection to `host:port`. Close it with `aclose()`."""

    def __init__(self, host: str, port: int, timeout: float = 5.0, max_bytes: int = MAX_RESPONSE_BYTES) -> None:
        self.host, self.port = host, port
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._stream: SocketStream | None = None
        self._reader: BufferedByteReceiveStream | None = None

    @classmethod
    def for_url(cls, url: str, timeout: float = 5.0) -> Http11Transport:
        rest = url.removeprefix("http://").rstrip("/")
        host, _, port = rest.partition(":")
        if not url.startswith("http://") or not port.isdigit() or "/" in rest:
            raise ValueError(f"{url!r} is not a plain http://host:port URL")
        return cls(host, int(port), timeout)

    async def aclose(self) -> None:
        if self._stream is not None:
            stream, self._stream, self._reader = self._stream, None, None
            with anyio.CancelScope(shield=True):
                await stream.aclose()

    async def __aenter__(self) -> Http11Transport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def request(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        payload = body or b""
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nAccept: application/json\r\n"
                f"Content-Length: {len(payload)}\r\n")
        if body is not None:
            head += "Content-Type: application/json\r\n"
        data = head.encode("latin-1") + b"\r\n" + payload
        for attempt in (0, 1):
            reused = self._stream is not None
            try:
                with anyio.fail_after(self.timeout):
                    if self._stream is None:
                        await self._connect()
                    return await self._exchange(data, method)
            except TimeoutError:
                await self.aclose()
                raise TransportError(f"no response within {self.timeout} s", timeout=True) from None
            except _Closed:
                await self.aclose()
                if reused and attempt == 0:
                    continue  # the server dropped an idle keep-alive connection: retry once, fresh
                raise TransportError("connection closed before any response") from None
            except TransportError:
                await self.aclose()
                raise
            except (OSError, anyio.BrokenResourceError, anyio.EndOfStream, anyio.IncompleteRead,
                    anyio.DelimiterNotFound) as exc:
                await self.aclose()
                raise TransportError(f"{type(exc).__name__}: {exc}") from None
        raise AssertionError("unreachable")

    async def _connect(self) -> None:
        try:
            self._stream = await anyio.connect_tcp(self.host, self.port)
        except OSError as exc:  # refused, unreachable: nothing is accepting connections there
            raise TransportError(f"cannot connect to {self.host}:{self.port}: {exc}", refused=True) from None
        self._reader = BufferedByteReceiveStream(self._stream)

    async def _exchange(self, data: bytes, method: str) -> tuple[int, bytes]:
        assert self._stream is not None and self._reader is not None
        try:
            await self._stream.send(data)
            first = await self._reader.receive_until(b"\r\n", _MAX_HEAD)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, ConnectionResetError,
                BrokenPipeError):
            raise _Closed from None
        while True:
            status = _status(first)
            headers = await self._headers()
            if status >= 200 or status == 101:
                break
            first = await self._reader.receive_until(b"\r\n", _MAX_HEAD)  # skip 1xx interim responses
        if method == "HEAD" or status in _NO_BODY:
            body = b""
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            body = await self._chunked()
        elif "content-length" in headers:
            try:
                length = int(headers["content-length"])
            except ValueError:
                raise TransportError(f"bad Content-Length {headers['content-length']!r}") from None
            if length > self.max_bytes:
                raise TransportError(f"response larger than {self.max_bytes} bytes")
            body = await self._reader.receive_exactly(length)
        else:
            body = await self._until_eof()
            headers["connection"] = "close"
        if headers.get("connection", "").lower() == "close":
            await self.aclose()
        return status, body

    async def _headers(self) -> dict[str, str]:
        assert self._reader is not None
        headers: dict[str, str] = {}
        total = 0
        while line := await self._reader.receive_until(b"\r\n", _MAX_HEAD):
            total += len(line)
            if total > _MAX_HEAD:
                raise TransportError(f"response headers larger than {_MAX_HEAD} bytes")
            name, _, value = line.partition(b":")
            headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
        return headers

    async def _chunked(self) -> bytes:
        assert self._reader is not None
        parts: list[bytes] = []
        size = 0
        while True:
            line = await self._reader.receive_until(b"\r\n", 1024)
            try:
                n = int(line.split(b";", 1)[0].strip() or b"0", 16)
            except ValueError:
                raise TransportError(f"bad chunk size {line[:40]!r}") from None
            if n == 0:
                while await self._reader.receive_until(b"\r\n", _MAX_HEAD):
                    pass  # trailers, up to the empty line
                return b"".join(parts)
            size += n
            if size > self.max_bytes:
                raise TransportError(f"response larger than {self.max_bytes} bytes")
            parts.append(await self._reader.receive_exactly(n))
            await self._reader.receive_exactly(2)

    async def _until_eof(self) -> bytes:
        assert self._reader is not None
        parts: list[bytes] = []
        size = 0
        while True:
            try:
                chunk = await self._reader.receive(65536)
            except anyio.EndOfStream:
                return b"".join(parts)
            size += len(chunk)
            if size > self.max_bytes:
                raise TransportError(f"response larger than {self.max_bytes} bytes")
            parts.append(chunk)


def _status(line: bytes) -> int:
    parts = line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise TransportError(f"not an HTTP/1.x response: {line[:60]!r}")
    return int(parts[1])
