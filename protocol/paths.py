"""Where a daemon lives on this machine: the default state directory and the socket inside it.

Shared by the CLI (which starts and asks the daemon) and the TUI (which only reaches it through
`protocol`), so both find the same daemon without either importing the other.
"""

from __future__ import annotations

import os
from pathlib import Path

SOCKET_NAME = "staminad.sock"


def default_state_dir() -> Path:
    """`$STAMINAD_STATE_DIR`, else `$XDG_STATE_HOME/staminabench` (default `~/.local/state/staminabench`)."""
    env = os.environ.get("STAMINAD_STATE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "staminabench"


__all__ = ["SOCKET_NAME", "default_state_dir"]
