"""Bounded reads of log files the viewer shows: the last `limit` bytes, decoded leniently, never more."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import msgspec

from staminad.sandbox.beneath import open_regular


class LogTail(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    text: str
    size: int  # the file's whole size in bytes
    cut: bool  # True when only the tail is shown


def bounded_tail(path: Path, limit: int, beneath: Path | None = None) -> LogTail | None:
    """The file's last `limit` bytes as text (None when there is no such regular file). With `beneath`, a directory
    above `path` that the agent does not control, no link is followed below it either (`sandbox.beneath`)."""
    try:
        if beneath is None:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        else:
            fd = open_regular(beneath, path.relative_to(beneath).as_posix())
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
    if size > limit and "\n" in text:
        text = text[text.index("\n") + 1 :]  # start at a whole line
    return LogTail(path=str(path), text=text, size=size, cut=size > limit)
