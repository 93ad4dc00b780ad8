"""Reads of agent-written files are bounded: LoC counting, markers and control files never read a file whole."""

from __future__ import annotations

import os
import random
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from staminad.engine.loc import CHUNK, MAX_FILE_BYTES, count_loc
from staminad.engine.markers import read_marker
from staminad.sandbox.bounded import NotSmallFileError, read_int, read_small_file, read_tail

T = TypeVar("T")


def _peak(fn: Callable[[], T]) -> tuple[T, int]:
    """What `fn` returns and the peak of memory it allocated meanwhile."""
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_sparse_one_line_gigabyte_file_costs_one_chunk_of_memory(tmp_path: Path) -> None:
    """A 1 GiB file without a newline (0 bytes on disk) is counted from its first bytes, in bounded memory."""
    (tmp_path / "app.py").write_text("import os\n\nprint(os.getpid())\n")
    with open(tmp_path / "huge.py", "wb") as fh:
        fh.truncate(1 << 30)
    loc, peak = _peak(lambda: count_loc(tmp_path))
    assert loc == 3  # two lines of app.py, and the huge file's one (NUL bytes, not blank)
    assert peak < 4 * CHUNK + (1 << 20)


def test_counts_match_a_plain_line_count_across_chunk_boundaries(tmp_path: Path) -> None:
    """Lines split over chunk boundaries, blank lines of spaces and a last line without newline count as before."""
    rng = random.Random(7)
    lines = [
        rng.choice(["", "   ", "\t", "x = 1", "  return y", "#" * rng.randrange(1, 3 * CHUNK)]) for _ in range(300)
    ]
    text = "\n".join(lines)
    assert len(text) < MAX_FILE_BYTES
    (tmp_path / "m.py").write_text(text)
    assert count_loc(tmp_path) == sum(1 for line in text.encode().splitlines() if line.strip())


def test_only_the_first_bytes_of_an_oversized_file_are_read(tmp_path: Path) -> None:
    """A real (not sparse) file past the per-file bound counts only the lines in its first MAX_FILE_BYTES."""
    line = b"a = 1\n"
    (tmp_path / "gen.py").write_bytes(line * (2 * MAX_FILE_BYTES // len(line)))
    assert count_loc(tmp_path) == MAX_FILE_BYTES // len(line) + 1  # the last, cut line counts once


def test_a_huge_marker_is_unreadable_not_loaded(tmp_path: Path) -> None:
    """A marker forged into a sparse gigabyte reads as one bounded, unreadable marker."""
    path = tmp_path / "m.json"
    with open(path, "wb") as fh:
        fh.write(b'{"exit": 0, "pad": "')
        fh.truncate(1 << 30)
    marker, peak = _peak(lambda: read_marker(path))
    assert marker is not None and marker["exit"] is None and "unreadable" in marker["error"]
    assert peak < 1 << 20
    path.write_text("[1, 2]")
    assert read_marker(path)["error"] == "unreadable marker: not a JSON object"  # type: ignore[index]


def test_control_files_and_logs_are_read_within_their_bounds(tmp_path: Path) -> None:
    """A pid file padded to a gigabyte is no pid; a log's tail is its last bytes only."""
    pid = tmp_path / "pid"
    with open(pid, "wb") as fh:
        fh.write(b"123")
        fh.truncate(1 << 30)
    assert read_int(pid) is None
    pid.write_text("4567\n")
    assert read_int(pid) == 4567 and read_int(tmp_path / "missing") is None
    log = tmp_path / "log"
    with open(log, "wb") as fh:
        fh.truncate(1 << 30)
        fh.seek(0, os.SEEK_END)
        fh.write(b"Traceback: the end\n")
    tail, peak = _peak(lambda: read_tail(log, 8))
    assert tail == "...the end\n"
    assert peak < 1 << 20


def test_control_reads_refuse_fifos_and_links_at_once(tmp_path: Path) -> None:
    """A FIFO or a link where a pid file, marker or log is expected is no value, read without waiting for a writer."""
    fifo, target, link = tmp_path / "fifo", tmp_path / "target", tmp_path / "link"
    os.mkfifo(fifo)
    target.write_text("42\n")
    link.symlink_to(target)
    assert read_int(fifo) is None and read_int(link) is None and read_int(target) == 42
    assert read_tail(fifo, 100) == "" and read_tail(link, 100) == ""
    marker = read_marker(fifo)
    assert marker is not None and "unreadable" in marker["error"]


def test_a_small_file_read_refuses_fifos_devices_and_oversized_files(tmp_path: Path) -> None:
    """A regular file is read whole; a FIFO (at once, with no writer), a device or a large file is refused."""
    fifo, big, small = tmp_path / "fifo", tmp_path / "big", tmp_path / "small"
    os.mkfifo(fifo)
    with big.open("wb") as fh:
        fh.truncate(1 << 30)  # sparse: read whole it would cost a gigabyte
    small.write_bytes(b"x" * 10)
    assert read_small_file(small, 10) == b"x" * 10
    for path, reason in ((fifo, "is not a regular file"), (Path("/dev/zero"), "is not a regular file")):
        with pytest.raises(NotSmallFileError, match=reason):
            read_small_file(path, 10)
    tracemalloc.start()
    try:
        with pytest.raises(NotSmallFileError, match="larger than 10 bytes"):
            read_small_file(big, 10)
        assert tracemalloc.get_traced_memory()[1] < 1 << 20  # only the bound was read
    finally:
        tracemalloc.stop()
