"""`stamina-tui`: attach the monitor to a running staminad, or serve it to a browser with textual-serve.

What the user can get wrong ends in one line, never a traceback: bad arguments (exit 2, the parser shared with
`staminad`), no terminal to draw on (exit 2), an address `--serve` cannot listen on (exit 2 for a bad `--host`,
1 for a busy port). A crash inside the app is a bug: it keeps its traceback and exits non-zero.
"""

from __future__ import annotations

import argparse
import errno
import os
import shlex
import socket
import sys
from pathlib import Path

from protocol.errors import ExpectedError, UsageError
from protocol.paths import SOCKET_NAME, resolve_state_dir, state_dir_flag
from protocol.usage import OneLineParser, integer

NO_TERMINAL = "stamina-tui needs a terminal to draw on (its output is not one); use --serve for a browser"


def _parser() -> argparse.ArgumentParser:
    ap = OneLineParser(prog="stamina-tui", description="Live monitor of a staminad daemon.")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--socket", type=Path, help="the daemon's control socket (an SSH-forwarded one works too)")
    where.add_argument("--state-dir", type=state_dir_flag, help="the daemon's state directory (its socket is inside)")
    ap.add_argument("--serve", action="store_true", help="serve the monitor to a browser instead (textual-serve)")
    ap.add_argument("--host", default="127.0.0.1", help="with --serve: address to bind (default 127.0.0.1)")
    ap.add_argument("--port", type=integer, default=8566, help="with --serve: port (default 8566)")
    return ap


def socket_path(args: argparse.Namespace) -> Path:
    if args.socket is not None:
        return Path(args.socket)
    return resolve_state_dir(args.state_dir) / SOCKET_NAME


def has_terminal() -> bool:
    """Whether the app has somewhere to draw: a terminal on stdout, or a driver named by the environment.

    textual-serve runs each browser's copy of the app on pipes with `TEXTUAL_DRIVER` set to its web driver;
    anything else without a terminal would only fill a pipe or a file with escape sequences.
    """
    return sys.stdout.isatty() or bool(os.environ.get("TEXTUAL_DRIVER"))


def check_listen(host: str, port: int) -> None:
    """Bind every address `host` names on `port` once and let go, so textual-serve is only started where it can
    listen (as `staminad view` binds first): a bad host is a `UsageError`, a busy port an `ExpectedError`.

    The probe binds what aiohttp will bind (each address `getaddrinfo` gives, SO_REUSEADDR as asyncio sets it).
    """
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        reason = exc.strerror or exc
        raise UsageError(f"--host {host} is not an address to listen on ({reason}); pick another --host") from None
    for family, _, _, _, address in addresses:
        try:
            socket.create_server(address, family=family).close()
        except OSError as exc:
            if exc.errno == errno.EADDRNOTAVAIL:
                raise UsageError(f"--host {host} is not an address of this machine; pick another --host") from None
            if exc.errno == errno.EADDRINUSE:
                raise ExpectedError(f"port {port} on {host} is in use; pick another --port") from None
            raise ExpectedError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def serve(ap: argparse.ArgumentParser, args: argparse.Namespace, path: Path) -> int:
    if not 1 <= args.port <= 65535:
        ap.error(f"--port {args.port} is not a port number (1..65535)")
    try:
        check_listen(args.host, args.port)
    except ExpectedError as exc:
        print(f"stamina-tui: error: {exc}", file=sys.stderr)
        return exc.exit_status
    from textual_serve.server import Server

    command = f"{shlex.quote(sys.executable)} -m tui --socket {shlex.quote(str(path))}"
    # Our copy of textual-serve's page loads its font from the package's static files (this box is offline).
    templates = Path(__file__).parent / "serve_templates"
    Server(command, host=args.host, port=args.port, title="stamina-tui", templates_path=templates).serve()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    try:
        path = socket_path(args).absolute()
    except ExpectedError as exc:  # a --state-dir (or $STAMINAD_STATE_DIR) that names no directory
        print(f"stamina-tui: error: {exc}", file=sys.stderr)
        return exc.exit_status
    if args.serve:
        return serve(ap, args, path)
    if not has_terminal():
        print(f"stamina-tui: error: {NO_TERMINAL}", file=sys.stderr)
        return 2
    from tui.app import make_app

    app = make_app(path)
    app.run()
    # Textual prints an uncaught exception's traceback once the terminal is restored, and sets return_code:
    # a crash must not look like a clean quit to the shell, tmux or textual-serve.
    return app.return_code or 0


if __name__ == "__main__":
    sys.exit(main())
