"""Where a daemon lives on this machine: the state directory and the socket inside it.

Shared by the CLI (which starts and asks the daemon) and the TUI (which only reaches it through
`protocol`), so both find the same daemon without either importing the other.
"""

from __future__ import annotations

import argparse
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
    """`$STAMINAD_STATE_DIR` (empty means unset), else `$XDG_STATE_HOME/staminabench` (default
    `~/.local/state/staminabench`)."""
    env = os.environ.get("STAMINAD_STATE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "staminabench"


def state_dir_flag(text: str) -> Path:
    """An argparse type for `--state-dir`: an empty one is refused rather than read as the current directory."""
    if not text:
        raise argparse.ArgumentTypeError("must not be empty (leave it out for the default)")
    return Path(text)


def resolve_state_dir(flag: Path | None) -> Path:
    """The state directory a command uses: `--state-dir`, else the default, made absolute once.

    Absolute because parts run elsewhere: a harness runs with its workspace as the working directory and is
    handed paths inside the state directory, so a relative one would no longer resolve there.
    """
    return (flag if flag is not None else default_state_dir()).expanduser().absolute()


__all__ = [
    "SOCKET_NAME",
    "SOCKET_PATH_MAX",
    "SocketPathError",
    "default_state_dir",
    "resolve_state_dir",
    "socket_path",
    "state_dir_flag",
]
