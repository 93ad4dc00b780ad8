"""Where a daemon lives on this machine: the state directory and the socket inside it.

Shared by the CLI (which starts and asks the daemon) and the TUI (which only reaches it through
`protocol`), so both find the same daemon without either importing the other.
"""

from __future__ import annotations

import argparse
import os
import socket
import stat
from pathlib import Path

from protocol.errors import ExpectedError, UsageError

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
    chosen = flag if flag is not None else default_state_dir()
    try:
        expanded = chosen.expanduser()
    except RuntimeError:  # `~name` for a user this machine does not know
        raise UsageError(
            f"the state directory {chosen} starts with {chosen.parts[0]}, the home of no user on this machine "
            f"(for a directory of that name, write ./{chosen})"
        ) from None
    return expanded.absolute()


def clear_stale_socket(path: Path, hint: str) -> None:
    """Make room to bind a Unix socket at `path`: nothing there is fine, a socket nobody listens on (left by a
    process that died) is removed, anything else is refused in one line (`UsageError`) and left untouched.

    `lstat`, so a symbolic link is refused rather than followed; only a refused connection proves a socket
    stale. `hint` ends the line: what the user can do instead (such as "pick another --socket").
    """
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return  # nothing there (or no such directory: the bind says so)
    if not stat.S_ISSOCK(mode):
        kind = "a symbolic link" if stat.S_ISLNK(mode) else "a directory" if stat.S_ISDIR(mode) else "not a socket"
        raise UsageError(f"{path} exists and is {kind}; it is left alone: {hint}")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1)
        probe.connect(str(path))
    except ConnectionRefusedError:
        pass  # stale: removed below
    except OSError as exc:
        raise UsageError(f"{path} is a socket that cannot be checked ({exc.strerror or exc}); {hint}") from None
    else:
        raise UsageError(f"{path} is a socket another process is listening on; {hint}")
    finally:
        probe.close()
    path.unlink(missing_ok=True)


__all__ = [
    "SOCKET_NAME",
    "SOCKET_PATH_MAX",
    "SocketPathError",
    "clear_stale_socket",
    "default_state_dir",
    "resolve_state_dir",
    "socket_path",
    "state_dir_flag",
]
