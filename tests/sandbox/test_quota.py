"""The workspace quota's watchdog: it measures allocated blocks without following links and kills past the quota."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from staminad.sandbox.inside.quota import used_kb, watch


def test_usage_counts_allocated_blocks_and_never_follows_a_link(tmp_path: Path) -> None:
    """A sparse gigabyte costs nothing, 4 MiB allocated counts 4 MiB, and a link to a big tree counts as a link."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    with open(outside / "big", "wb") as fh:
        os.posix_fallocate(fh.fileno(), 0, 64 << 20)
    (ws / "out").symlink_to(outside)
    with open(ws / "sparse", "wb") as fh:
        fh.truncate(1 << 30)
    with open(ws / "real", "wb") as fh:
        os.posix_fallocate(fh.fileno(), 0, 4 << 20)
    assert 4096 <= used_kb(str(ws)) < 4096 + 64


def test_the_watchdog_kills_the_harness_past_the_quota_and_says_how_much(tmp_path: Path) -> None:
    """A workspace over its quota ends the harness process at the next look, with the usage written down."""
    ws = tmp_path / "ws"
    ws.mkdir()
    with open(ws / "ballast", "wb") as fh:
        os.posix_fallocate(fh.fileno(), 0, 2 << 20)
    harness = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        watch(str(ws), 1024, harness.pid, str(tmp_path / "over"))
        assert harness.wait(timeout=30) == -9
        assert int((tmp_path / "over").read_text()) >= 2048
    finally:
        harness.kill()
        harness.wait()
