"""One HTTP/1.1 exchange of the suite client (see `http11`): send the request, read the answer strictly.

The answer's head (1xx interim answers skipped, at most MAX_INTERIM), then its body by its framing:
Content-Length, chunked (trailers skipped) or close-delimited, each bounded (the head, each line, the
body). Whether the connection can carry the next request is decided here too; the bytes come from
`http11_socket.Connection`.
"""

from __future__ import annotations

from staminad.suite.http11_socket import Connection, ServerEOF
from staminad.suite.runner import TransportError

MAX_HEAD = 64 * 1024  # status line and headers of one answer together
MAX_LINE = 8 * 1024  # one header, chunk-size or trailer line
MAX_INTERIM = 16  # 1xx answers before the final one
_NO_BODY = {204, 304}
_HEX = b"0123456789abcdefABCDEF"
# The headers an answer's framing depends on (lower-case name as sent -> the key `_head` gives it).
_FRAMING = {name.encode(): name for name in ("content-length", "transfer-encoding", "connection")}


class ClosedUnanswered(Exception):
    """The connection was closed before the response started; args[0]: the peer reset it (our bytes unread)."""


class Exchange(Connection):
    """Reads one answer off the connection; `max_bytes` caps its body."""

    max_bytes: int

    def _exchange(self, data: bytes, method: str) -> tuple[int, bytes]:
        assert self._sock is not None
        try:
            self._send(data)
            if self._closes:
                self._dial_spare()  # the server sets it up while it works on this request
            self._fill()  # which arms quickack first: our send just left quickack mode
        except ServerEOF:
            raise ClosedUnanswered(self._peer_reset()) from None
        except (ConnectionResetError, BrokenPipeError):
            if self._interrupted.is_set():
                raise TransportError("the suite was stopped") from None
            raise ClosedUnanswered(True) from None
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
        """(version, status, the framing headers by lower-case name: `_FRAMING`) of the next answer head."""
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
            key = _FRAMING.get(name.strip().lower())
            if key is None:
                continue  # every line is checked, only the framing's are kept: a suite reads no other header
            text = value.strip().decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        return version, status, headers

    def _exactly(self, n: int) -> bytes:
        while len(self._buf) < n:
            try:
                self._fill()
            except ServerEOF:
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
        except ServerEOF:
            raise TransportError("connection closed inside a chunked body") from None

    def _until_eof(self) -> bytes:
        while len(self._buf) <= self.max_bytes:
            try:
                self._fill()
            except ServerEOF:
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
    if not connection:
        return version == b"HTTP/1.0"
    tokens = {t.strip() for t in connection.lower().split(",")}
    if version == b"HTTP/1.0":
        return "keep-alive" not in tokens
    return "close" in tokens


def _length(value: str, cap: int) -> int:
    if value.isdigit() and value.isascii() and len(value) < 8:
        length = int(value)  # the common case: one plain length of at most 7 digits
    else:
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


__all__ = ["ClosedUnanswered", "Exchange"]
