"""The suite client's connection (see `http11`): dialling, the spare, interrupts, deadlines and buffered reads.

The suite must run at the speed of the server, whatever its HTTP stack (see `_arm_quickack`): a
server that writes the head and the body of an answer in two small writes without TCP_NODELAY has
its second write held by Nagle's algorithm until our ACK of the first. Linux delays that ACK by up
to 40 ms unless the socket is in quickack mode, which is what turns 0.2 ms requests into 45 ms ones.
A server that closes the connection after every answer (HTTP/1.0 stacks, Flask's development server)
would make every request wait for a new handshake and for the server to accept and set up the
connection: once an answer closed its connection, the next one is dialled while the server works on
the request in flight (`_dial_spare`), so that setup overlaps the server's own work.

Every socket call runs within the request's deadline (`_bound`), and `interrupt()`, from any thread,
ends a dial or a read in flight; the bytes read land in `_buf` for the framing (`http11_framing`).
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
import select
import socket
import struct
import threading
import time

from staminad.suite.runner import TransportError

RESET_GRACE = 0.1  # seconds to tell a server's close with our request unread from one after reading it
SLACK = 0.05  # seconds a socket call may wait past the request's deadline, or give up before it (`_bound`)
_READ = 65536
_TCP_INFO: int | None = getattr(socket, "TCP_INFO", None)
_TCP_CLOSE = 7  # tcp_info.tcpi_state of a socket the peer reset (include/net/tcp_states.h)
_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)  # Linux only; elsewhere ACKs are as the OS does them


class ServerEOF(Exception):
    """The server closed its side of the connection."""


class Connection:
    """One kept-alive TCP connection to `host:port` (and at most one spare), blocking; the base of `Http11Transport`.

    Use it from one thread at a time; `interrupt()` is the one call that is safe from any thread.
    """

    def __init__(self, host: str, port: int, timeout: float, *, quickack: bool) -> None:
        self.host, self.port = host, port
        self.timeout = timeout
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
        self._idle_poll = select.poll()  # `_reusable`'s, registered for `_idle_fd`
        self._idle_fd = -1
        self._interrupted = threading.Event()
        self._guard = threading.Lock()  # orders interrupt() against the owner replacing or closing the socket

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

    def _left(self) -> float:
        """Seconds left of this request's budget; TimeoutError once it is spent."""
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return left

    def _bound(self) -> None:
        """Give the socket's calls what is left of the request's budget; TimeoutError once it is spent.

        The socket stays in blocking mode and the kernel bounds each receive and send (SO_RCVTIMEO,
        SO_SNDTIMEO; a call past it fails with EAGAIN, which `_fill` and `_send` turn into TimeoutError):
        a Python socket timeout would add a poll() before every call, a system call per read the floor
        does not make. Setting the bound is a system call too, and most requests take a millisecond: it is
        set again only when it is more than SLACK away from what is left, so a call never waits past the
        deadline, nor gives up before it, by more than SLACK.
        """
        assert self._sock is not None
        left = self._left()
        if self._sock_timeout is None or abs(self._sock_timeout - left) > SLACK:
            # At least a millisecond: a zero timeval means no bound at all.
            whole, micros = divmod(max(round(left * 1_000_000), 1000), 1_000_000)
            bound = struct.pack("@ll", whole, micros)
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, bound)
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, bound)
            self._sock_timeout = left

    def _send(self, data: bytes) -> None:
        """Send all of `data` within the request's budget."""
        assert self._sock is not None
        self._bound()
        try:
            self._sock.sendall(data)
        except BlockingIOError:  # SO_SNDTIMEO ran out (see `_bound`)
            raise TimeoutError from None

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
        sock.setblocking(True)  # bounded by the kernel from here on (`_bound`)

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
        sock.setblocking(True)  # bounded by the kernel from here on (`_bound`)
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
        fd = self._sock.fileno()
        if fd != self._idle_fd:  # a poll object holds descriptor numbers only: one per connection is enough
            self._idle_poll, self._idle_fd = select.poll(), fd
            self._idle_poll.register(fd, select.POLLIN | select.POLLPRI)
        return not self._idle_poll.poll(0)

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
        """Append the next bytes from the socket to the buffer within the request's budget; ServerEOF at the close."""
        assert self._sock is not None
        self._bound()
        self._arm_quickack()
        try:
            chunk = self._sock.recv(_READ)
        except BlockingIOError:  # SO_RCVTIMEO ran out (see `_bound`)
            raise TimeoutError from None
        if not chunk:
            if self._interrupted.is_set():
                raise TransportError("the suite was stopped")
            raise ServerEOF
        self._buf += chunk


__all__ = ["Connection", "ServerEOF"]
