"""Lines of code of an agent's workspace, dependencies and harness state excluded (for LoC-per-turn)."""

from __future__ import annotations

import os
from pathlib import Path

CODE_SUFFIXES = frozenset({".py", ".js", ".mjs", ".cjs", ".ts", ".rs", ".go", ".java", ".kt", ".rb", ".php",
                           ".cs", ".c", ".h", ".cpp", ".sh", ".sql"})
SKIP_DIRS = frozenset({".home", ".git", "node_modules", "venv", ".venv", "__pycache__", "target", "dist", "build",
                       ".reference-agent", "site-packages", ".cache", ".npm", ".cargo"})
MAX_FILES = 20_000


def count_loc(workspace: Path) -> int:
    """Non-blank lines in code files, skipping dependency and cache directories (bounded file count)."""
    total = files = 0
    for root, dirs, names in os.walk(workspace):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")]
        for name in names:
            if Path(name).suffix not in CODE_SUFFIXES:
                continue
            files += 1
            if files > MAX_FILES:
                return total
            try:
                with open(os.path.join(root, name), "rb") as fh:
                    total += sum(1 for line in fh if line.strip())
            except OSError:
                continue
    return total
