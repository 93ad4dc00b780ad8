"""A minimal blocking HTTP/1.1 keep-alive client for suites: one connection per server, one request at a time.

Why blocking sockets in a worker thread (see `runner.run_suite`), not the event loop: measured against
the server zoo, a request through asyncio's socket calls cost ~170 us of client CPU and 1.4-2.7x the
floor's wall time on a loaded 2-core machine, the same client on a blocking socket ~60 us and
0.9-1.1x (benchmarks/bench_suite.py). The loop's per-wait bookkeeping (a future, a reader
registration, a task step) costs more than the request itself, and a client that burns CPU between
requests is preempted by the very server it woke up. httpx costs ~900 us. It handles exactly what a
suite needs, strictly and with bounds: Content-Length, chunked (trailers skipped) and close-delimited
bodies, 1xx interim answers, HTTP/1.0 servers, caps on the head, each header line, the body and the
number of interim answers, one deadline per request (connecting included), no redirects, and one
transparent retry on a fresh connection when a kept-alive connection turns out to be closed before
any response byte. `interrupt()` may be called from another thread to end a request in flight.

The connection (dialling, the spare, interrupts, deadlines, quickack) is `http11_socket`'s, reading one
answer `http11_framing`'s; this module holds the transport and its retry policy.
"""

from __future__ import annotations

import time

from staminad.suite.http11_framing import ClosedUnanswered, Exchange
from staminad.suite.http11_socket import ServerEOF
from staminad.suite.runner import MAX_RESPONSE_BYTES, TransportError

# Methods whose retry cannot apply a change twice (RFC 9110 9.2.2). Others are retried only when the
# server provably never read the request: it reset the connection, which a TCP stack does when a
# socket is closed with unread bytes or bytes arrive after its close (RFC 9112 9.3.1 allows that).
_IDEMPOTENT = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}


class Http11Transport(Exchange):
    """`Transport` over one kept-alive TCP connection to `host:port`, blocking. Close it with `close()`.

    Use it from one thread at a time; `interrupt()` is the one call that is safe from any thread.
    `quickack=False` leaves ACK timing to the kernel's defaults: only for measuring what it costs.
    """

    def __init__(
        self, host: str, port: int, timeout: float = 5.0, max_bytes: int = MAX_RESPONSE_BYTES, *, quickack: bool = True
    ) -> None:
        super().__init__(host, port, timeout, quickack=quickack)
        self.max_bytes = max_bytes

    @classmethod
    def for_url(cls, url: str, timeout: float = 5.0, *, quickack: bool = True) -> Http11Transport:
        rest = url.removeprefix("http://").rstrip("/")
        host, _, port = rest.partition(":")
        if not url.startswith("http://") or not port.isdigit() or "/" in rest:
            raise ValueError(f"{url!r} is not a plain http://host:port URL")
        return cls(host, int(port), timeout, quickack=quickack)

    def __enter__(self) -> Http11Transport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Http11Transport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def request(
        self, method: str, path: str, body: bytes | None, content_type: str | None = "application/json"
    ) -> tuple[int, bytes]:
        """Send one request (`content_type` goes with a body, unless None) and return (status, body)."""
        payload = body or b""
        head = (
            f"{method} {path} HTTP/1.1\r\n{self._host_header}Accept: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n"
        )
        if body is not None and content_type is not None:
            head += f"Content-Type: {content_type}\r\n"
        data = head.encode("latin-1") + b"\r\n" + payload
        self._deadline = time.monotonic() + self.timeout
        try:
            if self._interrupted.is_set():
                raise TransportError("the suite was stopped")
            if self._sock is not None and not self._reusable():
                self._drop()  # closed while idle (or sent bytes nobody asked for): dial afresh
            for attempt in (0, 1):
                # A kept-alive connection that already carried an answer may have been dropped while idle: an
                # idempotent request on it is retried. A spare earns a retry only when the server provably never
                # read the request (it reset the connection), as when it was closed before ours arrived; one that
                # read it and closed unanswered fails it, as a fresh connection would, so that dialling ahead never
                # changes a test's verdict.
                reused = self._sock is not None
                spare = not reused and self._take_spare()
                if not reused and not spare:
                    self._connect()
                try:
                    return self._exchange(data, method)
                except ClosedUnanswered as closed:
                    idle_drop = reused and method in _IDEMPOTENT
                    if attempt == 0 and (idle_drop or ((reused or spare) and (closed.args[0] or self._reset_soon()))):
                        self.close()
                        continue  # dropped while idle, nothing answered: once more on a fresh connection
                    self.close()
                    raise TransportError("connection closed before any response") from None
        except TimeoutError:
            self.close()
            raise TransportError(f"no response within {self.timeout} s", timeout=True) from None
        except TransportError:
            self.close()
            raise
        except ServerEOF:
            self.close()
            raise TransportError("connection closed before the response was complete") from None
        except OSError as exc:
            self.close()
            raise TransportError(f"{type(exc).__name__}: {exc}") from None
        raise AssertionError("unreachable")


__all__ = ["Http11Transport"]
