"""Lines of code of an agent's workspace, dependencies and harness state excluded (for LoC-per-turn).

The agent owns every byte counted here, so the count is bounded: files past `MAX_FILES`, bytes of a
file past `MAX_FILE_BYTES` and bytes in all past `MAX_TOTAL_BYTES` are not read, and reading goes in
fixed-size chunks, so a sparse one-line 1 GiB file costs one chunk of memory, not a gigabyte.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import BinaryIO

try:
    from staminad.sandbox.inside.beneath import WalkBudget, walk_files
except ImportError:  # inside a container, from the agent layer (no package): the layer's beneath.py sits beside it
    import importlib.util

    _spec = importlib.util.spec_from_file_location(
        "beneath", os.path.join(os.path.dirname(os.path.abspath(__file__)), "beneath.py")
    )
    assert _spec is not None and _spec.loader is not None
    _beneath = importlib.util.module_from_spec(_spec)
    sys.modules["beneath"] = _beneath
    _spec.loader.exec_module(_beneath)
    WalkBudget, walk_files = _beneath.WalkBudget, _beneath.walk_files  # type: ignore[misc]

CODE_SUFFIXES = frozenset(
    {
        ".py",
        ".js",
        ".mjs",
        ".cjs",
        ".ts",
        ".rs",
        ".go",
        ".java",
        ".kt",
        ".rb",
        ".php",
        ".cs",
        ".c",
        ".h",
        ".cpp",
        ".sh",
        ".sql",
    }
)
SKIP_DIRS = frozenset(
    {
        ".home",
        ".git",
        "node_modules",
        "venv",
        ".venv",
        "__pycache__",
        "target",
        "dist",
        "build",
        ".reference-agent",
        "site-packages",
        ".cache",
        ".npm",
        ".cargo",
    }
)
MAX_FILES = 20_000
MAX_ENTRIES = 200_000  # directory entries looked at in all (a million empty files is not a reason to wait)
MAX_SECONDS = 20.0  # a walk that takes longer stops and counts what it saw
MAX_FILE_BYTES = 8 << 20  # no hand-written source file is this large; beyond it is not code worth counting
MAX_TOTAL_BYTES = 256 << 20
CHUNK = 64 << 10
_BLANK = b" \t\r\f\v"


def _count_file(fh: BinaryIO, budget: int) -> tuple[int, int]:
    """(non-blank lines, bytes read) of an open binary file, reading at most `budget` bytes in chunks."""
    lines = used = 0
    pending = False  # the current, unfinished line has a non-blank byte
    while used < budget:
        chunk = fh.read(min(CHUNK, budget - used))
        if not chunk:
            break
        used += len(chunk)
        parts = chunk.split(b"\n")
        for part in parts[:-1]:
            if pending or part.strip(_BLANK):
                lines += 1
            pending = False
        pending = pending or bool(parts[-1].strip(_BLANK))
    return lines + pending, used


def count_loc(workspace: Path) -> int:
    """Non-blank lines in code files, skipping dependency and cache directories (bounded files, bytes, entries and
    time); no link is followed and nothing but a regular file is read (see `beneath.walk_files`)."""
    total = files = used = 0
    budget = WalkBudget(MAX_ENTRIES, MAX_SECONDS)
    for rel, _st, fd in walk_files(workspace, budget, SKIP_DIRS, skip_hidden=True):  # hidden: tools' state
        name = rel.rsplit("/", 1)[-1]
        if fd is None or name.startswith(".") or Path(name).suffix not in CODE_SUFFIXES:
            continue
        files += 1
        if files > MAX_FILES or used >= MAX_TOTAL_BYTES:
            return total
        try:
            with os.fdopen(os.dup(fd), "rb") as fh:
                lines, n = _count_file(fh, min(MAX_FILE_BYTES, MAX_TOTAL_BYTES - used))
        except OSError:
            continue
        total += lines
        used += n
    return total


if __name__ == "__main__":  # inside a container, run from the agent layer: `python3 -I -S loc.py WORKSPACE`
    print(count_loc(Path(sys.argv[1])))
