"""logcap: a log fed by the agent's output never grows past twice its bound, and always ends with the latest bytes."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from staminad.sandbox.inside.logcap import CUT, copy


def test_a_flood_keeps_only_the_latest_output_within_the_bound(tmp_path: Path) -> None:
    """20 MiB through a 64 KiB cap: the file stays under 128 KiB plus the cut note and ends with the last line."""
    limit = 64 << 10
    r, w = os.pipe()
    log = tmp_path / "server.log"
    fd = os.open(log, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    sizes: list[int] = []

    def feed() -> None:
        with os.fdopen(w, "wb") as out:
            for i in range(20 * 1024):
                out.write(b"x" * 1000 + f" line {i}\n".encode())
                if i % 1024 == 0:
                    sizes.append(log.stat().st_size)

    writer = threading.Thread(target=feed)
    writer.start()
    copy(r, fd, limit)
    writer.join()
    os.close(fd)
    os.close(r)
    data = log.read_bytes()
    assert len(data) <= 2 * limit + len(CUT)
    assert max(sizes) <= 2 * limit + len(CUT) + (1 << 16)  # never more than a chunk past the bound meanwhile
    assert data.startswith(CUT) and data.endswith(b" line 20479\n")


def test_a_quiet_log_is_kept_whole(tmp_path: Path) -> None:
    """Output under the bound is copied as it came, nothing cut."""
    r, w = os.pipe()
    os.write(w, b"started on port 8080\n")
    os.close(w)
    log = tmp_path / "server.log"
    fd = os.open(log, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    copy(r, fd, 1 << 20)
    os.close(fd)
    os.close(r)
    assert log.read_bytes() == b"started on port 8080\n"
