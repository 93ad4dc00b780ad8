"""Bounded reads of files an agent can write or fill: the daemon never reads more than it asked for.

An agent controls its workspace and, on the local runtime, its control directory too; a sparse 1 GiB
file costs nothing on disk but everything in memory if it is read whole. Every daemon-side read of
such a file goes through here with an explicit byte bound. So do files a user names (a sweep file): a path
can be `/dev/zero` or a FIFO as easily as a typo.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import msgspec

from staminad.sandbox.inside.beneath import open_regular

SMALL = 4096  # pid files, exit codes
MARKER = 64 * 1024  # a completion marker is about 100 bytes


_REGULAR = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_regular(path: Path) -> int:
    """A descriptor of `path` if it is a regular file, not a link (raises OSError otherwise, like `open`): opened
    non-blocking, so a FIFO put where a file is expected is refused at once instead of hanging the reader."""
    fd = os.open(path, _REGULAR)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"{path} is not a regular file")
    return fd


def read_head(path: Path, limit: int) -> bytes:
    """At most `limit` bytes from the start of the regular file `path` (raises OSError like `open`, and for a link,
    FIFO, device or socket)."""
    with os.fdopen(_open_regular(path), "rb") as fh:
        return fh.read(limit)


class NotSmallFileError(ValueError):
    """A user-named file that is not a regular file, or is larger than its bound; the reason in one line."""


def read_small_file(path: Path, limit: int) -> bytes:
    """The whole of `path` if it is a regular file of at most `limit` bytes (raises OSError like `open`).

    Opened non-blocking so a FIFO with no writer is refused at once instead of waiting for one.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise NotSmallFileError(f"{path} is {what}")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise NotSmallFileError(f"{path} is larger than {limit} bytes")
    return data


def read_int(path: Path) -> int | None:
    """The integer a small control file holds, or None if it is missing, oversized or not a number."""
    try:
        return int(read_head(path, SMALL).strip())
    except (OSError, ValueError):
        return None


class LogTail(msgspec.Struct, frozen=True, kw_only=True):
    """The end of a log file: at most the bound's bytes, decoded leniently."""

    path: str
    text: str
    size: int  # the file's whole size in bytes
    cut: bool  # True when only the tail is shown


def bounded_tail(path: Path, limit: int, beneath: Path | None = None, *, whole_lines: bool = True) -> LogTail | None:
    """The file's last `limit` bytes as text, from a whole line when cut unless `whole_lines` is False (None when
    there is no such regular file). With `beneath`, a directory above `path` that the agent does not control, no
    link is followed below it either (`sandbox.beneath`)."""
    try:
        fd = _open_regular(path) if beneath is None else open_regular(beneath, path.relative_to(beneath).as_posix())
    except (OSError, ValueError):
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):  # a FIFO or device an agent planted would block or never end
            return None
        size = st.st_size
        if size > limit:
            fh.seek(size - limit)
        data = fh.read(limit)
    text = data.decode("utf-8", errors="replace")
    if whole_lines and size > limit and "\n" in text:
        text = text[text.index("\n") + 1 :]  # start at a whole line
    return LogTail(path=str(path), text=text, size=size, cut=size > limit)


def read_tail(path: Path, limit: int) -> str:
    """The last `limit` bytes of a log, decoded leniently, "..." first when cut ("" when it is missing or not a
    regular file)."""
    tail = bounded_tail(path, limit, whole_lines=False)
    if tail is None:
        return ""
    return ("..." if tail.cut else "") + tail.text
