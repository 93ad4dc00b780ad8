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


def _expanded(text: str) -> Path | None:
    """`text` with a leading `~` or `~user` expanded as a shell would (`./~name` stays a literal name); None
    when it names the home of no user on this machine."""
    if not text.startswith("~"):
        return Path(text)
    try:
        return Path(text).expanduser()
    except RuntimeError:  # pathlib's word for a `~user` it cannot find
        return None


def _no_home(text: str) -> str:
    first = text.split("/", 1)[0]
    return (
        f"{text} starts with {first}, the home of no user on this machine "
        f"(for a directory of that name, write ./{text})"
    )


def default_state_dir() -> Path:
    """`$STAMINAD_STATE_DIR` (empty means unset; `~` expanded), else `$XDG_STATE_HOME/staminabench` (default
    `~/.local/state/staminabench`)."""
    env = os.environ.get("STAMINAD_STATE_DIR")
    if env:
        path = _expanded(env)
        if path is None:
            raise UsageError(f"STAMINAD_STATE_DIR={_no_home(env)}")
        return path
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "staminabench"


def state_dir_flag(text: str) -> Path:
    """An argparse type for `--state-dir`: an empty one is refused rather than read as the current directory; a
    leading `~` is expanded here, on the text, so that `./~name` can still name a directory called `~name`."""
    if not text:
        raise argparse.ArgumentTypeError("must not be empty (leave it out for the default)")
    path = _expanded(text)
    if path is None:
        raise argparse.ArgumentTypeError(_no_home(text))
    return path


def resolve_state_dir(flag: Path | None) -> Path:
    """The state directory a command uses: `--state-dir`, else the default, made absolute once.

    Absolute because parts run elsewhere: a harness runs with its workspace as the working directory and is
    handed paths inside the state directory, so a relative one would no longer resolve there.
    """
    return (flag if flag is not None else default_state_dir()).absolute()


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
