"""The scenario's kept-blob total carried between keeps: always what a fresh sum of the directory gives."""

from __future__ import annotations

import os
from pathlib import Path

from staminad.sandbox import keptbytes
from staminad.sandbox.codekeep import BLOBS, keep_from_dir


def _summed(blobs: Path) -> int:
    return sum(p.stat().st_size for p in blobs.iterdir() if p.is_file())


def test_the_carried_total_is_the_summed_total_after_every_keep(tmp_path: Path) -> None:
    """Keeps that add contents, keep none, or follow another process's change each start from the true total."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    blobs = tmp_path / BLOBS
    for turn in range(6):
        (ws / "app.py").write_text(f"version = {turn}\n" * (10 + turn))  # a new content every other keep
        if turn % 2:
            (ws / "app.py").write_text("version = same\n")
        keep_from_dir(ws, tmp_path, f"t{turn:04d}-a01-i00")
        assert keptbytes.stored_bytes(blobs) == _summed(blobs)
    extra = blobs / ("f" * 64)
    extra.write_bytes(b"x" * 777)  # written by someone else: the directory moved, the total is summed again
    os.utime(blobs, ns=(0, 0))  # even set back by hand, the modification time is not the one remembered
    assert keptbytes.stored_bytes(blobs) == _summed(blobs)
    extra.unlink()
    assert keptbytes.stored_bytes(blobs) == _summed(blobs)


def test_a_directory_replaced_by_another_is_summed_afresh(tmp_path: Path) -> None:
    """A blobs directory removed and made again (a scenario started over) is never given the old total."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "app.py").write_text("print(1)\n" * 100)
    keep_from_dir(ws, tmp_path, "t0000-a01-i00")
    blobs = tmp_path / BLOBS
    for blob in blobs.iterdir():
        blob.unlink()
    last = blobs.stat().st_mtime_ns
    blobs.rmdir()
    blobs.mkdir()
    # Made again later, as a scenario started over is (the inode number may well be the same one): its time moved.
    os.utime(blobs, ns=(last + 1_000_000_000, last + 1_000_000_000))
    assert keptbytes.stored_bytes(blobs) == 0
