"""Bounded reads of log files the viewer shows: the last `limit` bytes, decoded leniently, never more."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import msgspec


class LogTail(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    text: str
    size: int  # the file's whole size in bytes
    cut: bool  # True when only the tail is shown


def bounded_tail(path: Path, limit: int) -> LogTail | None:
    """The file's last `limit` bytes as text (None when there is no such regular file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
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
