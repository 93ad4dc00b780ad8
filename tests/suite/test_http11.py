"""The suite's HTTP/1.1 transport against raw-socket servers with every write pattern and framing it must read."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import pytest

from staminad.suite import http11_socket
from staminad.suite.http11 import Http11Transport
from staminad.suite.runner import TransportError
from tests.helpers.rawserver import Conn, RawServer, answer

BODY = b'{"a": 1}'


def keep_alive(write: Callable[[Conn, bytes], None]) -> Callable[[Conn], None]:
    """A script answering every request on the connection with `write(conn, request)`."""

    def serve(conn: Conn) -> None:
        while (request := conn.read_request()) is not None:
            write(conn, request)

    return serve


def _requests(server: RawServer, n: int, method: str = "GET", **kw: bool) -> list[tuple[int, bytes]]:
    with Http11Transport.for_url(server.url, timeout=5.0, **kw) as t:
        return [t.request(method, f"/x/{i}", b"{}" if method == "POST" else None) for i in range(n)]


@pytest.mark.parametrize("quickack", [True, False])
def test_head_and_body_in_separate_segments_with_nagle_on(quickack: bool) -> None:
    """Answers written as a head segment and a body segment (Nagle on) are read whole, on one connection."""
    with RawServer(keep_alive(lambda c, r: c.write(*answer(200, BODY)))).running() as server:
        got = _requests(server, 20, quickack=quickack)
    assert got == [(200, BODY)] * 20
    assert server.accepted == 1 and len(server.requests) == 20


def test_quickack_is_armed_after_each_answer_on_linux() -> None:
    """On Linux the socket is left in quickack mode after an answer, so the next answer's segments are ACKed at once."""
    if http11_socket._QUICKACK is None:
        pytest.skip("this platform has no TCP_QUICKACK")
    with (
        RawServer(keep_alive(lambda c, r: c.write(*answer(200, BODY)))).running() as server,
        Http11Transport.for_url(server.url) as t,
    ):
        t.request("GET", "/", None)
        assert t._sock is not None
        assert t._sock.getsockopt(socket.IPPROTO_TCP, http11_socket._QUICKACK) == 1
        assert t._sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1


def test_answer_in_one_segment() -> None:
    """A server writing head and body in one segment is read the same way."""
    with RawServer(keep_alive(lambda c, r: c.write(b"".join(answer(201, BODY))))).running() as server:
        assert _requests(server, 5, "POST") == [(201, BODY)] * 5
    assert server.accepted == 1


def test_works_where_the_platform_has_no_quickack(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without TCP_QUICKACK (macOS, BSD) the transport still reads split answers."""
    monkeypatch.setattr(http11_socket, "_QUICKACK", None)
    with RawServer(keep_alive(lambda c, r: c.write(*answer(200, BODY)))).running() as server:
        assert _requests(server, 3) == [(200, BODY)] * 3


def _chunked(conn: Conn, request: bytes) -> None:
    conn.write(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n",
        b'3;ext=1\r\n{"a\r\n',
        b'5\r\n": 1}\r\n',
        b"0\r\nX-Sum: 8\r\nX-Other: y\r\n\r\n",
    )


def test_chunked_with_extensions_and_trailers() -> None:
    """Chunks written one segment each, with extensions and trailers, join into the body; the connection stays."""
    with RawServer(keep_alive(_chunked)).running() as server:
        assert _requests(server, 4) == [(200, BODY)] * 4
    assert server.accepted == 1


def _close_delimited(conn: Conn) -> None:
    if conn.read_request() is not None:
        conn.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n", b'{"a": ', b"1}")


def test_close_delimited_http10_bodies() -> None:
    """An HTTP/1.0 answer without a length ends at the close; every request then dials afresh."""
    with RawServer(_close_delimited).running() as server:
        assert _requests(server, 3) == [(200, BODY)] * 3
    assert server.served == {1, 2, 3} and server.accepted <= 4  # and at most one spare left unused


def _http10_with_length(conn: Conn) -> None:
    if conn.read_request() is not None:
        conn.write(*answer(200, BODY, version="HTTP/1.0"))
        conn.read_request()  # an HTTP/1.0 server may keep reading; the client must not send here


def test_http10_answer_without_keep_alive_is_not_reused() -> None:
    """An HTTP/1.0 answer (with a length, no keep-alive) closes the connection on the client's side."""
    with RawServer(_http10_with_length).running() as server:
        assert _requests(server, 3) == [(200, BODY)] * 3
    assert len(server.served) == 3 and len(server.requests) == 3


def test_a_server_closing_after_each_answer_has_the_next_connection_dialled_while_it_works() -> None:
    """Once an answer closed its connection, the next connection is dialled before that request is answered."""
    ahead: list[bool] = []

    def serve(conn: Conn) -> None:
        if conn.read_request() is not None:
            if conn.index > 1:  # from the second request on, the spare must arrive while this one waits
                ahead.append(conn.server.wait_accepted(conn.index + 1, timeout=5.0))
            conn.write(*answer(200, BODY, "Connection: close"))

    with RawServer(serve).running() as server:
        assert _requests(server, 4) == [(200, BODY)] * 4
    assert ahead == [True, True, True]
    assert server.served == {1, 2, 3, 4} and len(server.requests) == 4


@pytest.mark.parametrize("keep_every_other", [False, True])
def test_a_server_accepting_one_connection_at_a_time_is_never_kept_waiting(keep_every_other: bool) -> None:
    """A single-threaded server serves each request even with a spare in its queue (and when it keeps some)."""
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if keep_every_other else "HTTP/1.0"
        count = 0

        def do_GET(self) -> None:
            Handler.count += 1
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            if keep_every_other and Handler.count % 2:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(BODY)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)  # not threading: one connection, then the next
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with Http11Transport("127.0.0.1", server.server_address[1], timeout=5.0) as t:
            assert [t.request("GET", f"/{i}", None) for i in range(12)] == [(200, BODY)] * 12
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
    assert Handler.count == 12


def test_a_spare_the_server_dropped_unused_costs_a_fresh_connection() -> None:
    """A dialled-ahead connection the server closed before any request (an idle timeout) is replaced, not failed."""
    dropped = threading.Event()

    def serve(conn: Conn) -> None:
        if conn.index == 3:  # the spare dialled while request 2 was served: closed at once, unused
            conn.sock.close()
            dropped.set()
            return
        if conn.read_request() is not None:
            if conn.index == 2:
                dropped.wait(5.0)
            conn.write(*answer(201, BODY, "Connection: close"))

    with RawServer(serve).running() as server, Http11Transport.for_url(server.url) as t:
        assert [t.request("POST", f"/{i}", b"{}") for i in range(3)] == [(201, BODY)] * 3
    assert dropped.is_set()
    assert server.requests == [b"POST /0 {}", b"POST /1 {}", b"POST /2 {}"]  # each applied once
    assert 3 not in server.served


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_request_the_server_drops_on_the_spare_fails_as_on_a_fresh_connection(method: str) -> None:
    """A server that reads a request on the spare and closes unanswered is failed for it, never retried."""

    def serve(conn: Conn) -> None:
        if conn.read_request() is not None and conn.index != 3:  # the spare, dialled during request 2, drops its one
            conn.write(*answer(200, BODY, "Connection: close"))

    with RawServer(serve).running() as server, Http11Transport.for_url(server.url) as t:
        assert [t.request(method, f"/{i}", b"{}") for i in range(2)] == [(200, BODY)] * 2
        with pytest.raises(TransportError, match="closed before any response"):
            t.request(method, "/2", b"{}")
    assert server.requests.count(f"{method} /2 {{}}".encode()) == 1


def test_a_server_gone_between_answers_is_refused_despite_the_spare() -> None:
    """A server that stops after an answer is refused at the next request (the engine's sign of a dead server)."""
    listener_closed = threading.Event()

    def serve(conn: Conn) -> None:
        if conn.index == 3:  # the spare, accepted before the listener closed: gone with the server's process
            listener_closed.wait(5.0)
            return
        if conn.read_request() is not None:
            if conn.index == 2:
                conn.server.wait_accepted(3, timeout=5.0)  # the spare is in; now the server goes away
                conn.server.listener.shutdown(socket.SHUT_RDWR)  # stops listening at once (a close alone would not
                conn.server.listener.close()  # while the accept loop's thread is blocked in accept)
                listener_closed.set()
            conn.write(*answer(200, BODY, "Connection: close"))

    with RawServer(serve).running() as server, Http11Transport.for_url(server.url) as t:
        assert t.request("GET", "/0", None) == (200, BODY)
        assert t.request("GET", "/1", None) == (200, BODY)
        with pytest.raises(TransportError) as info:
            t.request("GET", "/2", None)
        assert info.value.refused, str(info.value)


def test_interim_1xx_answers_are_skipped() -> None:
    """100 Continue and 103 Early Hints before the final answer are read past."""

    def serve(conn: Conn, request: bytes) -> None:
        conn.write(
            b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", *answer(200, BODY)
        )

    with RawServer(keep_alive(serve)).running() as server:
        assert _requests(server, 3) == [(200, BODY)] * 3


def _answer_then_close(conn: Conn) -> None:
    if conn.read_request() is not None:
        conn.write(*answer(200, BODY))
    conn.sock.close()
    conn.server.closed.set()


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_connection_dropped_while_idle_is_redialled(method: str) -> None:
    """A server closing an idle kept-alive connection (without saying so) costs a fresh connection, no failure."""
    with RawServer(_answer_then_close).running() as server, Http11Transport.for_url(server.url) as t:
        for i in range(3):
            server.closed.clear()
            assert t.request(method, f"/{i}", None) == (200, BODY)
            assert server.closed.wait(10)
    assert server.accepted == 3 and len(server.requests) == 3  # each request sent once


def _read_second_then_drop(conn: Conn) -> None:
    """Answers the first request; reads the second one and closes without answering."""
    if conn.server.accepted > 1:
        keep_alive(lambda c, r: c.write(*answer(200, BODY)))(conn)
        return
    conn.read_request()
    conn.write(*answer(200, BODY))
    conn.read_request()
    conn.sock.shutdown(socket.SHUT_RDWR)


def test_request_read_then_dropped_is_retried_only_if_idempotent() -> None:
    """A GET the server read and dropped unanswered is retried fresh; a POST is not (it may have been applied)."""
    with RawServer(_read_second_then_drop).running() as server, Http11Transport.for_url(server.url) as t:
        t.request("GET", "/first", None)
        assert t.request("GET", "/again", None) == (200, BODY)
    assert server.requests.count(b"GET /again") == 2
    with RawServer(_read_second_then_drop).running() as server, Http11Transport.for_url(server.url) as t:
        t.request("GET", "/first", None)
        with pytest.raises(TransportError, match="closed before any response"):
            t.request("POST", "/items", b"{}")
    assert server.requests.count(b"POST /items {}") == 1


def _reset_unread(conn: Conn) -> None:
    """Answers the first request, then closes with the second one unread (the kernel sends a reset)."""
    if conn.server.accepted > 1:
        keep_alive(lambda c, r: c.write(*answer(201, BODY)))(conn)
        return
    conn.read_request()
    conn.write(*answer(200, BODY))
    conn.wait_readable()
    conn.sock.close()


def test_post_reset_unread_is_retried_once() -> None:
    """A POST the server provably never read (it reset the connection) is sent again, fresh, and applied once."""
    with RawServer(_reset_unread).running() as server, Http11Transport.for_url(server.url) as t:
        t.request("GET", "/first", None)
        assert t.request("POST", "/items", b"{}") == (201, BODY)
    assert server.requests == [b"GET /first", b"POST /items {}"]


def test_fresh_connection_closed_without_answer_is_not_retried() -> None:
    """A server closing a brand-new connection without answering fails the request at once (it is not idle-drop)."""

    def serve(conn: Conn) -> None:
        conn.read_request()

    with (
        RawServer(serve).running() as server,
        Http11Transport.for_url(server.url) as t,
        pytest.raises(TransportError, match="closed before any response"),
    ):
        t.request("GET", "/", None)
    assert server.accepted == 1


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (lambda c, r: c.write(b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000 + b"\r\n\r\n"), "longer than|larger than"),
        (lambda c, r: c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 9999999\r\n\r\n"), "larger than"),
        (lambda c, r: c.write(b"HTTP/1.1 100 Continue\r\n\r\n" * 40), "interim"),
        (lambda c, r: c.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), "bad chunk size"),
        (lambda c, r: c.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY"), "CRLF"),
        (lambda c, r: c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n"), "bad Content-Length"),
        (lambda c, r: c.write(b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n"), "bad Content-Length"),
        # more digits than int() converts (ValueError): too large, whatever it says
        (lambda c, r: c.write(b"HTTP/1.1 200 OK\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n"), "larger than"),
        (lambda c, r: c.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+1_0\r\n"), "bad chunk size"),
        (lambda c, r: c.write(b"SSH-2.0-OpenSSH\r\n\r\n"), "not an HTTP"),
        (lambda c, r: c.write(b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"), "bad response header"),
    ],
)
def test_bad_answers_fail_with_one_clear_line(script: Callable[[Conn, bytes], None], message: str) -> None:
    """Oversized, endless, broken or non-HTTP answers are TransportErrors marked `bad`, each one short line."""
    with (
        RawServer(keep_alive(script)).running() as server,
        Http11Transport.for_url(server.url, timeout=5.0) as t,
        pytest.raises(TransportError, match=message) as caught,
    ):
        t.request("GET", "/", None)
    assert caught.value.bad and not (caught.value.refused or caught.value.timeout)
    assert len(str(caught.value)) < 200


def test_a_length_padded_with_thousands_of_zeros_is_the_number_it_spells() -> None:
    """A Content-Length of 5,000 zeros and a 2 (more digits than int() converts) is read as 2."""
    head = b"HTTP/1.1 200 OK\r\nContent-Length: " + b"0" * 5000 + b"2\r\n\r\n"
    with RawServer(keep_alive(lambda c, r: c.write(head, b"{}"))).running() as server:
        assert _requests(server, 2) == [(200, b"{}")] * 2


def test_body_cut_short_is_an_error() -> None:
    """A connection closed before Content-Length bytes arrived fails the request instead of returning a part."""

    def serve(conn: Conn) -> None:
        conn.read_request()
        conn.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", b"{}")

    with (
        RawServer(serve).running() as server,
        Http11Transport.for_url(server.url) as t,
        pytest.raises(TransportError, match="2 of 100 body bytes"),
    ):
        t.request("GET", "/", None)


def test_silent_server_times_out() -> None:
    """A server that reads and never answers fails the request within its timeout, marked as a timeout."""

    def serve(conn: Conn) -> None:
        conn.read_request()
        conn.read_request()  # holds the connection open until the client gives up

    with (
        RawServer(serve).running() as server,
        Http11Transport.for_url(server.url, timeout=0.2) as t,
        pytest.raises(TransportError) as info,
    ):
        t.request("GET", "/", None)
    assert info.value.timeout


def test_a_server_trickling_its_answer_is_cut_at_the_request_deadline() -> None:
    """Bytes that keep coming, each before a read's bound, still end the request at its one deadline."""

    def serve(conn: Conn) -> None:
        conn.read_request()
        conn.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        for _ in range(1000):  # a byte every 20 ms: 20 s for the body, unless the client hangs up (a write fails)
            time.sleep(0.02)  # pacing of the server, not synchronisation
            conn.write(b"x")

    with RawServer(serve).running() as server, Http11Transport.for_url(server.url, timeout=0.3) as t:
        started = time.monotonic()
        with pytest.raises(TransportError) as info:
            t.request("GET", "/", None)
        took = time.monotonic() - started
    assert info.value.timeout
    assert took < 10  # a bound per read (each renewed by the next byte) would wait out the whole 20 s body


def test_connection_closed_inside_the_head_says_so() -> None:
    """A server closing after part of the response head fails the request as a closed connection."""

    def serve(conn: Conn) -> None:
        conn.read_request()
        conn.write(b"HTTP/1.1 200 OK\r\nContent-")

    with (
        RawServer(serve).running() as server,
        Http11Transport.for_url(server.url) as t,
        pytest.raises(TransportError, match="^connection closed before the response was complete"),
    ):
        t.request("GET", "/", None)


def test_chunked_with_a_content_length_too_is_read_chunked_and_not_reused() -> None:
    """An answer with both framings is read by its chunking, and its connection is not trusted for the next."""

    def serve(conn: Conn, request: bytes) -> None:
        conn.write(
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"8\r\n" + BODY + b"\r\n0\r\n\r\n",
        )

    with RawServer(keep_alive(serve)).running() as server:
        assert _requests(server, 2) == [(200, BODY)] * 2
    assert server.served == {1, 2}


def test_interrupt_from_another_thread_ends_the_request_in_flight_and_later_ones() -> None:
    """interrupt() from another thread ends a request the server never answers, at once; later requests refuse."""
    read = threading.Event()

    def serve(conn: Conn) -> None:
        conn.read_request()
        read.set()
        conn.read_request()  # never answers; holds the connection until the client goes

    with RawServer(serve).running() as server, Http11Transport.for_url(server.url, timeout=60.0) as t:

        def stop() -> None:
            read.wait(10)
            t.interrupt()

        stopper = threading.Thread(target=stop)
        stopper.start()
        with pytest.raises(TransportError, match="stopped") as info:
            t.request("GET", "/", None)
        stopper.join(10)
        assert not info.value.timeout and t._sock is None
        with pytest.raises(TransportError, match="stopped"):
            t.request("GET", "/", None)
    assert server.accepted == 1


def test_interrupt_aborts_a_connect_that_hangs() -> None:
    """A server whose accept queue is full never completes our handshake; interrupt() still ends the request."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(3):  # fill the accept queue (nobody accepts): later SYNs are dropped, connects hang
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    dialling = threading.Event()

    class Watched(Http11Transport):
        def _dial(self, sock: socket.socket, address: tuple[str, int]) -> None:
            dialling.set()  # the socket is published: from here on interrupt() must reach the connect
            super()._dial(sock, address)

    t = Watched("127.0.0.1", port, timeout=60.0)

    def stop_once_dialling() -> None:
        dialling.wait(10)
        t.interrupt()

    stopper = threading.Thread(target=stop_once_dialling)
    stopper.start()
    try:
        with pytest.raises(TransportError, match="stopped") as info:
            t.request("GET", "/", None)
        assert not info.value.timeout
    finally:
        stopper.join(20)
        t.close()
        for s in (*fillers, listener):
            s.close()
