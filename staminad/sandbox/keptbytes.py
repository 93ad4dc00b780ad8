"""How many bytes of blobs a scenario's kept code holds (`codekeep`'s bound per scenario), without a stat per blob.

Summing the blobs means a stat each, thousands by turn 1,000 (~10 ms on the turn's critical path, measured), so the
total is carried from one keep to the next in the process that keeps (the daemon's control worker) and summed again
only when the directory is not as that process left it: another inode, or entries added or removed since (its
modification time moved). Only the daemon writes blobs, one keep at a time per scenario, and a keep follows the one
before by a whole attempt: a change within the same clock tick as the last keep's writes, which the modification
time could not show, does not happen here.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

MAX_REMEMBERED = 4096  # directories remembered; past it the memory starts afresh (a scan each, once)
_STORED: dict[str, tuple[tuple[int, int, int], int]] = {}  # blobs directory -> (device, inode, mtime), total bytes


def _identity(blobs: Path) -> tuple[int, int, int]:
    st = os.stat(blobs, follow_symlinks=False)
    return st.st_dev, st.st_ino, st.st_mtime_ns


def stored_bytes(blobs: Path) -> int:
    """The bytes of the blobs in `blobs`: carried over from this process's last keep there, else summed."""
    seen = _identity(blobs)
    known = _STORED.get(str(blobs))
    if known is not None and known[0] == seen:
        return known[1]
    with os.scandir(blobs) as entries:
        total = sum(e.stat().st_size for e in entries if e.is_file(follow_symlinks=False))
    _remember(blobs, seen, total)  # an entry added during the scan moved the mtime: the next keep sums again
    return total


def remember(blobs: Path, total: int) -> None:
    """After a keep wrote its blobs: `total` is what `blobs` holds as it is now."""
    with contextlib.suppress(OSError):
        _remember(blobs, _identity(blobs), total)


def _remember(blobs: Path, seen: tuple[int, int, int], total: int) -> None:
    if len(_STORED) >= MAX_REMEMBERED:
        _STORED.clear()
    _STORED[str(blobs)] = (seen, total)


__all__ = ["MAX_REMEMBERED", "remember", "stored_bytes"]
