"""A log that keeps only its end: copies standard input to a file, never letting it grow past a bound.

Runs inside the container (standard library only), as root, between the agent's server and its log in the
root-only control directory: `... | python3 -I -S logcap.py LOG LIMIT`. The server's output is the agent's,
so without a bound a chatty (or hostile) server fills the host's disk through the bind-mounted log; with it the
log never holds more than twice LIMIT bytes, and its last LIMIT bytes are always the latest output, which is
all the engine reads (the tail shown in feedback). The copy never stops reading, so the server never blocks.
"""

import contextlib
import os
import sys

CHUNK = 64 * 1024
CUT = b"[... earlier output cut: the log keeps its last part only]\n"


def copy(src: int, dst: int, limit: int) -> None:
    """Append everything read from `src` to `dst`, rewriting `dst` to its last `limit` bytes whenever it passes
    twice that."""
    size = os.lseek(dst, 0, os.SEEK_END)
    while chunk := os.read(src, CHUNK):
        try:
            size += _write_all(dst, chunk)
            if size > 2 * limit:
                os.lseek(dst, size - limit, os.SEEK_SET)
                keep = b""
                while len(keep) < limit and (part := os.read(dst, limit - len(keep))):
                    keep += part
                os.ftruncate(dst, 0)
                os.lseek(dst, 0, os.SEEK_SET)
                size = _write_all(dst, CUT + keep)
        except OSError:  # a full disk: the output is dropped, never the writer (it would die of SIGPIPE)
            with contextlib.suppress(OSError):
                size = os.fstat(dst).st_size


def _write_all(fd: int, data: bytes) -> int:
    """Write all of `data` (a short write is continued); how many bytes were written."""
    view, done = memoryview(data), 0
    while done < len(data):
        done += os.write(fd, view[done:])
    return done


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: logcap.py LOG LIMIT", file=sys.stderr)
        return 2
    fd = os.open(argv[0], os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    copy(0, fd, int(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
