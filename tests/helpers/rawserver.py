"""Tiny HTTP servers on raw sockets for transport tests: each writes its answers exactly as scripted.

Nagle stays on (no TCP_NODELAY), as in the servers agents write, so a head and a body written
separately travel as separate segments, the second held until the client ACKs the first.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator

Serve = Callable[["Conn"], None]


class Conn:
    """One accepted connection: reads requests, writes raw bytes, records what it saw."""

    def __init__(self, sock: socket.socket, server: RawServer) -> None:
        self.sock, self.server = sock, server
        self.buf = b""
        self.index = 0  # this connection's place in accept order, from 1

    def read_request(self) -> bytes | None:
        """The next request's line and body (`POST /x {..}`), or None when the client closed."""
        while b"\r\n\r\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                return None
            self.buf += data
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(self.buf) < length:
            self.buf += self.sock.recv(65536)
        body, self.buf = self.buf[:length], self.buf[length:]
        request = lines[0].rsplit(b" ", 1)[0] + (b" " + body if body else b"")
        with self.server.lock:
            self.server.requests.append(request)
            self.server.served.add(self.index)
        return request

    def write(self, *parts: bytes) -> None:
        """Each part in its own write (its own segment, Nagle permitting)."""
        for part in parts:
            self.sock.sendall(part)

    def wait_readable(self) -> None:
        """Block until the client's next bytes have arrived, without reading them (bounded)."""
        import select

        select.select([self.sock], [], [], 10)


class RawServer:
    """Accepts connections on 127.0.0.1 and runs `serve(conn)` for each in its own thread."""

    def __init__(self, serve: Serve) -> None:
        self.serve = serve
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.lock = threading.Lock()
        self.accepted = 0
        self.served: set[int] = set()  # the connections (by accept order) that carried a request
        self.requests: list[bytes] = []
        self.arrived = threading.Condition(self.lock)  # notified at each accept
        self.closed = threading.Event()  # set by scripts once they closed a connection
        self._threads: list[threading.Thread] = []

    def _accept_loop(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
                index = self.accepted
                self.arrived.notify_all()
            thread = threading.Thread(target=self._run, args=(sock, index), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _run(self, sock: socket.socket, index: int) -> None:
        conn = Conn(sock, self)
        conn.index = index
        with sock, contextlib.suppress(OSError):
            self.serve(conn)

    def wait_accepted(self, n: int, timeout: float = 10.0) -> bool:
        """Block until `n` connections have been accepted (bounded); whether they were."""
        with self.arrived:
            return self.arrived.wait_for(lambda: self.accepted >= n, timeout)

    @contextlib.contextmanager
    def running(self) -> Iterator[RawServer]:
        thread = threading.Thread(target=self._accept_loop, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            with contextlib.suppress(OSError):
                self.listener.shutdown(socket.SHUT_RDWR)
            self.listener.close()
            thread.join(timeout=10)
            for t in self._threads:
                t.join(timeout=10)


def answer(status: int, body: bytes, *headers: str, version: str = "HTTP/1.1") -> tuple[bytes, bytes]:
    """(head, body) of an answer with Content-Length, to be written separately."""
    lines = [f"{version} {status} X", f"Content-Length: {len(body)}", "Content-Type: application/json", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode(), body
