"""Where a daemon lives on this machine: the default state directory and the socket inside it.

Shared by the CLI (which starts and asks the daemon) and the TUI (which only reaches it through
`protocol`), so both find the same daemon without either importing the other.
"""

from __future__ import annotations

import os
from pathlib import Path

from protocol.errors import ExpectedError

SOCKET_NAME = "staminad.sock"
SOCKET_PATH_MAX = 107  # bytes of a Unix socket's path the kernel takes (sun_path holds 108, its NUL included)


class SocketPathError(ExpectedError):
    """The state directory's path is too long to hold its control socket (exit status 1)."""


def socket_path(state_dir: Path) -> Path:
    """The control socket of the daemon on `state_dir`; refused in one line when the path is too long for one."""
    path = state_dir / SOCKET_NAME
    size = len(os.fsencode(path))
    if size > SOCKET_PATH_MAX:
        raise SocketPathError(
            f"the state directory {state_dir} is too long a path for its control socket ({size} bytes with "
            f"{SOCKET_NAME}; a Unix socket's path holds at most {SOCKET_PATH_MAX}): pass a shorter --state-dir "
            "(a symbolic link to this one will do)"
        )
    return path


def default_state_dir() -> Path:
    """`$STAMINAD_STATE_DIR`, else `$XDG_STATE_HOME/staminabench` (default `~/.local/state/staminabench`)."""
    env = os.environ.get("STAMINAD_STATE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "staminabench"


__all__ = ["SOCKET_NAME", "SOCKET_PATH_MAX", "SocketPathError", "default_state_dir", "socket_path"]
