"""Reading and writing scenario packs on disk; the pure pack logic lives in `staminad.bench.pack`."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from staminad.bench.pack import Pack, PackError, verify_pack

MAX_PACK_BYTES = 2 * 1024**3


def write_pack(directory: Path, files: Mapping[str, bytes]) -> None:
    """Write a pack atomically enough for a reader: the manifest goes last, each file via rename."""
    directory.mkdir(parents=True, exist_ok=True)
    if (directory / "manifest.json").exists() or any(directory.iterdir()):
        existing = {p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()}
        stray = sorted(existing - set(files))
        if stray:
            raise PackError(f"{directory} already holds other files (e.g. {stray[0]}); use an empty directory")
    for path in sorted(files, key=lambda p: p == "manifest.json"):
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(files[path])
        os.replace(tmp, target)


def read_pack(directory: Path) -> Pack:
    """Load and verify a pack directory; PackError names the problem in one line."""
    if not directory.is_dir():
        raise PackError(f"{directory} is not a directory")
    files: dict[str, bytes] = {}
    irregular: set[str] = set()  # there, but not read: a directory, FIFO, device or a link to one
    total = 0
    for p in sorted(directory.rglob("*")):
        if p.name.startswith(".tmp-"):
            continue
        if not p.is_file():  # regular files only: a FIFO or device is never opened
            irregular.add(p.relative_to(directory).as_posix())
        else:
            with p.open("rb") as fh:  # never more than the bound, however large one file is
                data = fh.read(MAX_PACK_BYTES - total + 1)
            total += len(data)
            if total > MAX_PACK_BYTES:
                raise PackError(f"{directory} is larger than {MAX_PACK_BYTES} bytes: not a scenario pack")
            files[p.relative_to(directory).as_posix()] = data
    return verify_pack(files, irregular)
