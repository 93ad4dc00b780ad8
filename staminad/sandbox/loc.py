"""Lines of code of an agent's workspace, dependencies and harness state excluded (for LoC-per-turn).

The agent owns every byte counted here, so the count is bounded: files past `MAX_FILES`, bytes of a
file past `MAX_FILE_BYTES` and bytes in all past `MAX_TOTAL_BYTES` are not read, and reading goes in
fixed-size chunks, so a sparse one-line 1 GiB file costs one chunk of memory, not a gigabyte.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

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
    """Non-blank lines in code files, skipping dependency and cache directories (bounded files and bytes)."""
    total = files = used = 0
    for root, dirs, names in os.walk(workspace):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")]
        for name in names:
            if Path(name).suffix not in CODE_SUFFIXES:
                continue
            files += 1
            if files > MAX_FILES or used >= MAX_TOTAL_BYTES:
                return total
            try:
                with (Path(root) / name).open("rb") as fh:
                    lines, n = _count_file(fh, min(MAX_FILE_BYTES, MAX_TOTAL_BYTES - used))
            except OSError:
                continue
            total += lines
            used += n
    return total


if __name__ == "__main__":  # inside a container, run from the agent layer: `python3 -I -S loc.py WORKSPACE`
    import sys

    print(count_loc(Path(sys.argv[1])))
