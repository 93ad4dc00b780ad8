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

The suite must run at the speed of the server, whatever its HTTP stack (see `_arm_quickack`): a
server that writes the head and the body of an answer in two small writes without TCP_NODELAY has
its second write held by Nagle's algorithm until our ACK of the first. Linux delays that ACK by up
to 40 ms unless the socket is in quickack mode, which is what turns 0.2 ms requests into 45 ms ones.
A server that closes the connection after every answer (HTTP/1.0 stacks, Flask's development server)
would make every request wait for a new handshake and for the server to accept and set up the
connection: once an answer closed its connection, the next one is dialled while the server works on
the request in flight (`_dial_spare`), so that setup overlaps the server's own work.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
import select
import socket
import threading
import time

from staminad.suite.runner import MAX_RESPONSE_BYTES, TransportError

MAX_HEAD = 64 * 1024  # status line and headers of one answer together
MAX_LINE = 8 * 1024  # one header, chunk-size or trailer line
MAX_INTERIM = 16  # 1xx answers before the final one
RESET_GRACE = 0.1  # seconds to tell a server's close with our request unread from one after reading it
SLACK = 0.05  # seconds a socket call may wait past the request's deadline, or give up before it (`_bound`)
_NO_BODY = {204, 304}
_READ = 65536
_HEX = b"0123456789abcdefABCDEF"
# Methods whose retry cannot apply a change twice (RFC 9110 9.2.2). Others are retried only when the
# server provably never read the request: it reset the connection, which a TCP stack does when a
# socket is closed with unread bytes or bytes arrive after its close (RFC 9112 9.3.1 allows that).
_IDEMPOTENT = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}
_TCP_INFO: int | None = getattr(socket, "TCP_INFO", None)
_TCP_CLOSE = 7  # tcp_info.tcpi_state of a socket the peer reset (include/net/tcp_states.h)
_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)  # Linux only; elsewhere ACKs are as the OS does them


class _EOF(Exception):
    """The server closed its side of the connection."""


class _Closed(Exception):
    """The connection was closed before the response started; args[0]: the peer reset it (our bytes unread)."""


class Http11Transport:
    """`Transport` over one kept-alive TCP connection to `host:port`, blocking. Close it with `close()`.

    Use it from one thread at a time; `interrupt()` is the one call that is safe from any thread.
    `quickack=False` leaves ACK timing to the kernel's defaults: only for measuring what it costs.
    """

    def __init__(
        self, host: str, port: int, timeout: float = 5.0, max_bytes: int = MAX_RESPONSE_BYTES, *, quickack: bool = True
    ) -> None:
        self.host, self.port = host, port
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.quickack = quickack and _QUICKACK is not None
        self._sock: socket.socket | None = None
        # A connection dialled ahead, while a server that closes after each answer works on the request in
        # flight; the next request goes on it. Never more than one, and always the next one used, so that a
        # server accepting one connection at a time is never left waiting on a spare we do not send on.
        self._spare: socket.socket | None = None
        self._closes = False  # the last answer closed its connection
        self._address: tuple[int, tuple[str, int]] | None = None  # (family, sockaddr), resolved once
        self._buf = bytearray()
        self._host_header = f"Host: {host}:{port}\r\n"
        self._deadline = 0.0
        self._sock_timeout: float | None = None  # the timeout the socket's calls have now (see `_bound`)
        self._interrupted = threading.Event()
        self._guard = threading.Lock()  # orders interrupt() against the owner replacing or closing the socket

    @classmethod
    def for_url(cls, url: str, timeout: float = 5.0, *, quickack: bool = True) -> Http11Transport:
        rest = url.removeprefix("http://").rstrip("/")
        host, _, port = rest.partition(":")
        if not url.startswith("http://") or not port.isdigit() or "/" in rest:
            raise ValueError(f"{url!r} is not a plain http://host:port URL")
        return cls(host, int(port), timeout, quickack=quickack)

    def close(self) -> None:
        """Close the connection and the spare, if any (the transport stays usable: a request dials afresh)."""
        self._drop()
        self._drop_spare()

    def _drop_spare(self) -> None:
        """Close the spare, if any (only the owning thread sets it, so an unlocked look decides there is none)."""
        if self._spare is None:
            return
        with self._guard:
            spare, self._spare = self._spare, None
        if spare is not None:
            spare.close()

    def _drop(self) -> None:
        """Close the connection in use (not the spare)."""
        with self._guard:
            sock, self._sock = self._sock, None
        self._buf.clear()
        if sock is not None:
            sock.close()

    def interrupt(self) -> None:
        """End the request in flight (from any thread) and refuse later ones: each raises TransportError.

        Only shuts the socket down, never closes it: the owning thread may be inside a call on that
        descriptor, and a closed number can be reused by another socket at once.
        """
        self._interrupted.set()
        with self._guard:
            for sock in (self._sock, self._spare):
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)

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
                except _Closed as closed:
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
        except _EOF:
            self.close()
            raise TransportError("connection closed before the response was complete") from None
        except OSError as exc:
            self.close()
            raise TransportError(f"{type(exc).__name__}: {exc}") from None
        raise AssertionError("unreachable")

    # --- connection ---------------------------------------------------------------------------

    def _left(self) -> float:
        """Seconds left of this request's budget; TimeoutError once it is spent."""
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return left

    def _bound(self) -> None:
        """Give the socket's calls what is left of the request's budget; TimeoutError once it is spent.

        Setting a timeout is a system call, and most requests take a millisecond: the socket's timeout
        is set again only when it is more than SLACK away from what is left, so a call never waits past
        the deadline, nor gives up before it, by more than SLACK.
        """
        assert self._sock is not None
        left = self._left()
        if self._sock_timeout is None or abs(self._sock_timeout - left) > SLACK:
            self._sock.settimeout(left)
            self._sock_timeout = left

    def _connect(self) -> None:
        self._drop_spare()  # never a fresh dial behind a spare's back (see `_spare`)
        try:
            if self._address is None:
                self._address = self._resolve()
        except OSError as exc:
            raise TransportError(f"cannot resolve {self.host}: {exc}", refused=True) from None
        family, address = self._address
        sock = socket.socket(family, socket.SOCK_STREAM)
        with self._guard:  # published before dialling, so that interrupt() can abort a connect that hangs
            if self._interrupted.is_set():
                sock.close()
                raise TransportError("the suite was stopped")
            self._sock = sock
        self._sock_timeout = None
        self._buf.clear()
        try:
            self._dial(sock, address)
        except TimeoutError:
            raise
        except OSError as exc:  # refused, unreachable: nothing is accepting connections there
            if self._interrupted.is_set():
                raise TransportError("the suite was stopped") from None
            raise TransportError(f"cannot connect to {self.host}:{self.port}: {exc}", refused=True) from None
        if self._interrupted.is_set():
            raise TransportError("the suite was stopped")
        # Our requests go out in one write each; NODELAY so that no request of ours ever waits on an ACK either.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _dial_spare(self) -> None:
        """Start connecting the spare without waiting for it (after a request went out; see `_spare`).

        Any trouble with it (the server is gone, the connect fails) is left for the next request to
        meet on a connection of its own: the spare is then dropped and the request dials as usual.
        """
        if self._spare is not None or self._address is None or self._interrupted.is_set():
            return
        family, address = self._address
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if sock.connect_ex(address) not in (0, errno.EINPROGRESS):
                sock.close()
                return
        except OSError:
            sock.close()
            return
        with self._guard:
            if self._interrupted.is_set():
                sock.close()
                return
            self._spare = sock

    def _take_spare(self) -> bool:
        """Make the spare the connection in use, once its handshake is done; False (and no spare) if it failed.

        A spare that is readable before anything was sent on it was closed or reset by the server.
        """
        if self._spare is None:
            return False
        left = self._left()  # before taking it: a spent budget leaves the spare for close() to release
        with self._guard:
            sock, self._spare = self._spare, None
        assert sock is not None
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLOUT)
        ready = poller.poll(left * 1000)
        if not ready or sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) or self._interrupted.is_set():
            sock.close()
            return False
        with self._guard:
            if self._interrupted.is_set():
                sock.close()
                return False
            self._sock = sock
        self._sock_timeout = None
        self._buf.clear()
        if not self._reusable():
            self._drop()
            return False
        return True

    def _dial(self, sock: socket.socket, address: tuple[str, int]) -> None:
        """Connect within the request's budget, so that interrupt() can always end it.

        The connect is started without blocking and its flag checked after: an interrupt that came
        before finds the flag set, one that comes after shuts down a connecting socket, which aborts
        the handshake and wakes the poll. (A blocking connect leaves a gap no check can close.)
        """
        sock.setblocking(False)
        err = sock.connect_ex(address)
        if err not in (0, errno.EINPROGRESS):
            raise OSError(err, os.strerror(err))
        if err and not self._interrupted.is_set():
            poller = select.poll()
            poller.register(sock.fileno(), select.POLLOUT)
            if not poller.poll(self._left() * 1000):
                raise TimeoutError
            err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                raise OSError(err, os.strerror(err))

    def _resolve(self) -> tuple[int, tuple[str, int]]:
        try:
            ip = ipaddress.ip_address(self.host)
        except ValueError:
            infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
            if not infos:
                raise OSError(f"{self.host} does not resolve") from None
            family, _, _, _, sockaddr = infos[0]
            return int(family), (str(sockaddr[0]), int(sockaddr[1]))
        return (socket.AF_INET6 if ip.version == 6 else socket.AF_INET), (self.host, self.port)

    def _reusable(self) -> bool:
        """Whether the idle kept-alive connection is still open and silent (polled without waiting).

        Readable while idle means the server closed it (EOF) or sent bytes nobody asked for: either
        way the next request goes on a fresh connection, so a dropped keep-alive costs no retry.
        """
        assert self._sock is not None
        if self._buf:
            return False
        poller = select.poll()
        poller.register(self._sock.fileno(), select.POLLIN | select.POLLPRI)
        return not poller.poll(0)

    def _peer_reset(self) -> bool:
        """After EOF: whether a reset followed the server's FIN (so it closed without reading our request)."""
        assert self._sock is not None
        try:
            if self._sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                return True
            if _TCP_INFO is not None:  # Linux: the state byte leads struct tcp_info; CLOSE after a reset
                return self._sock.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, 8)[0] == _TCP_CLOSE
        except OSError:
            return False
        return False

    def _reset_soon(self) -> bool:
        """Whether a FIN-closed connection is reset within `RESET_GRACE` (the server closing with our bytes unread).

        A server that shuts down its sending side before it closes (Python's socketserver does) sends
        its FIN first and its reset only at close(); our request can land between the two. There is
        no event to wait on for a reset after a FIN, so the state is polled for a short bounded time;
        only a non-idempotent request on a connection dropped that way ever waits here.
        """
        until = time.monotonic() + RESET_GRACE
        while not self._peer_reset():
            if time.monotonic() >= until:
                return False
            time.sleep(0.002)
        return True

    def _arm_quickack(self) -> None:
        """Put the socket in quickack mode, so that each segment of the answer is ACKed as it arrives.

        Quickack is not a lasting setting: the kernel leaves quickack mode again whenever it judges
        the connection interactive (each request we send shortly after reading an answer does that),
        so it is re-armed before every receive (the first one right after each send). Setting it also sends an ACK
        that is pending right now. Without it, a server holding its second small write under Nagle
        waits for our delayed ACK (40 ms on Linux) on every answer.
        """
        if self.quickack and self._sock is not None:
            assert _QUICKACK is not None
            self._sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)

    def _fill(self) -> None:
        """Append the next bytes from the socket to the buffer within the request's budget; _EOF at the close."""
        assert self._sock is not None
        self._bound()
        self._arm_quickack()
        chunk = self._sock.recv(_READ)
        if not chunk:
            if self._interrupted.is_set():
                raise TransportError("the suite was stopped")
            raise _EOF
        self._buf += chunk

    # --- one exchange -------------------------------------------------------------------------

    def _exchange(self, data: bytes, method: str) -> tuple[int, bytes]:
        assert self._sock is not None
        try:
            self._bound()
            self._sock.sendall(data)
            if self._closes:
                self._dial_spare()  # the server sets it up while it works on this request
            self._fill()  # which arms quickack first: our send just left quickack mode
        except _EOF:
            raise _Closed(self._peer_reset()) from None
        except (ConnectionResetError, BrokenPipeError):
            if self._interrupted.is_set():
                raise TransportError("the suite was stopped") from None
            raise _Closed(True) from None
        for _ in range(MAX_INTERIM + 1):
            version, status, headers = self._head()
            if status >= 200 or status == 101:
                break
        else:
            raise TransportError(f"more than {MAX_INTERIM} interim (1xx) answers", bad=True)
        te = headers.get("transfer-encoding", "").lower()
        # After a 101 the connection speaks another protocol; with both a length and chunking the
        # framing was ambiguous (RFC 9112 6.3): neither connection can carry another request.
        close = (
            _closes(version, headers.get("connection", "")) or status == 101 or bool(te and "content-length" in headers)
        )
        if method == "HEAD" or status in _NO_BODY or status == 101:
            body = b""
        elif te:
            if te.replace(" ", "").split(",")[-1] != "chunked":
                raise TransportError(f"unsupported Transfer-Encoding {te[:40]!r}", bad=True)
            body = self._chunked()
        elif "content-length" in headers:
            body = self._exactly(_length(headers["content-length"], self.max_bytes))
        else:
            body = self._until_eof()
            close = True
        if close or self._buf:  # bytes beyond the answer: the framing cannot be trusted for the next one
            self._drop()
        self._closes = close
        if not close:
            self._drop_spare()  # the server keeps connections now: the spare is not needed
        return status, body

    def _line(self, limit: int) -> bytes:
        """The next CRLF-terminated line from the buffer, without its CRLF."""
        start = 0
        while (end := self._buf.find(b"\r\n", start)) < 0:
            if len(self._buf) > limit:
                raise TransportError(f"a response line is longer than {limit} bytes", bad=True)
            start = max(len(self._buf) - 1, 0)
            self._fill()
        if end > limit:
            raise TransportError(f"a response line is longer than {limit} bytes", bad=True)
        line = bytes(self._buf[:end])
        del self._buf[: end + 2]
        return line

    def _head(self) -> tuple[bytes, int, dict[str, str]]:
        """(version, status, headers with lower-case names) of the next answer head."""
        end = self._buf.find(b"\r\n\r\n")
        while end < 0:
            if len(self._buf) > MAX_HEAD:
                raise TransportError(f"response headers larger than {MAX_HEAD} bytes", bad=True)
            seen = len(self._buf)
            self._fill()
            end = self._buf.find(b"\r\n\r\n", max(seen - 3, 0))
        if end > MAX_HEAD:
            raise TransportError(f"response headers larger than {MAX_HEAD} bytes", bad=True)
        lines = bytes(self._buf[:end]).split(b"\r\n")
        del self._buf[: end + 4]
        version, status = _status(lines[0])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep or len(line) > MAX_LINE:
                raise TransportError(f"bad response header line {line[:60]!r}", bad=True)
            key = name.strip().lower().decode("latin-1")
            text = value.strip().decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        return version, status, headers

    def _exactly(self, n: int) -> bytes:
        while len(self._buf) < n:
            try:
                self._fill()
            except _EOF:
                raise TransportError(f"connection closed after {len(self._buf)} of {n} body bytes") from None
        body = bytes(self._buf[:n])
        del self._buf[:n]
        return body

    def _chunked(self) -> bytes:
        parts: list[bytes] = []
        size = 0
        try:
            while True:
                line = self._line(MAX_LINE)
                digits = line.split(b";", 1)[0].strip()
                if not digits or digits.strip(_HEX):  # int(..., 16) would also take "+1_0" or "0x1"
                    raise TransportError(f"bad chunk size {line[:40]!r}", bad=True)
                n = int(digits, 16)
                if n == 0:
                    trailers = 0
                    while trailer := self._line(MAX_LINE):
                        trailers += len(trailer)
                        if trailers > MAX_HEAD:
                            raise TransportError(f"response trailers larger than {MAX_HEAD} bytes", bad=True)
                    return b"".join(parts)
                size += n
                if size > self.max_bytes:
                    raise TransportError(f"response larger than {self.max_bytes} bytes", bad=True)
                parts.append(self._exactly(n))
                if self._exactly(2) != b"\r\n":
                    raise TransportError("chunk data not followed by CRLF", bad=True)
        except _EOF:
            raise TransportError("connection closed inside a chunked body") from None

    def _until_eof(self) -> bytes:
        while len(self._buf) <= self.max_bytes:
            try:
                self._fill()
            except _EOF:
                body = bytes(self._buf)
                self._buf.clear()
                return body
        raise TransportError(f"response larger than {self.max_bytes} bytes", bad=True)


def _status(line: bytes) -> tuple[bytes, int]:
    parts = line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit() or len(parts[1]) != 3:
        raise TransportError(f"not an HTTP/1.x response: {line[:60]!r}", bad=True)
    return parts[0], int(parts[1])


def _closes(version: bytes, connection: str) -> bool:
    """Whether the server closes the connection after this answer (HTTP/1.0 does unless it keeps it alive)."""
    tokens = {t.strip() for t in connection.lower().split(",")}
    if version == b"HTTP/1.0":
        return "keep-alive" not in tokens
    return "close" in tokens


def _length(value: str, cap: int) -> int:
    values = {v.strip() for v in value.split(",")}
    # ASCII digits only: str.isdigit() also takes "²", which int() refuses.
    if len(values) != 1 or not (text := values.pop()).isascii() or not text.isdigit():
        raise TransportError(f"bad Content-Length {value[:40]!r}", bad=True)
    # Past the cap's digits it is too large whatever it says, and int() refuses 5,000 digits (ValueError),
    # leading zeros included.
    digits = text.lstrip("0") or "0"
    length = int(digits) if len(digits) <= len(str(cap)) else cap + 1
    if length > cap:
        raise TransportError(f"response larger than {cap} bytes", bad=True)
    return length
