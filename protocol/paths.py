"""Where a daemon lives on this machine: the state directory and the socket inside it.

Shared by the CLI (which starts and asks the daemon) and the TUI (which only reaches it through
`protocol`), so both find the same daemon without either importing the other.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

SOCKET_NAME = "staminad.sock"


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


__all__ = ["SOCKET_NAME", "default_state_dir", "resolve_state_dir", "state_dir_flag"]
