"""`stamina-tui`: attach the monitor to a running staminad, or serve it to a browser with textual-serve."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from protocol.paths import SOCKET_NAME, resolve_state_dir, state_dir_flag


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="stamina-tui", description="Live monitor of a staminad daemon.")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--socket", type=Path, help="the daemon's control socket (an SSH-forwarded one works too)")
    where.add_argument("--state-dir", type=state_dir_flag, help="the daemon's state directory (its socket is inside)")
    ap.add_argument("--serve", action="store_true", help="serve the monitor to a browser instead (textual-serve)")
    ap.add_argument("--host", default="127.0.0.1", help="with --serve: address to bind (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=8566, help="with --serve: port (default 8566)")
    return ap


def socket_path(args: argparse.Namespace) -> Path:
    if args.socket is not None:
        return Path(args.socket)
    return resolve_state_dir(args.state_dir) / SOCKET_NAME


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    path = socket_path(args).absolute()
    if args.serve:
        if not 1 <= args.port <= 65535:
            print(f"stamina-tui: error: --port {args.port} is not a port number", file=sys.stderr)
            return 2
        from textual_serve.server import Server

        command = f"{shlex.quote(sys.executable)} -m tui --socket {shlex.quote(str(path))}"
        # Our copy of textual-serve's page loads its font from the package's static files (this box is offline).
        templates = Path(__file__).parent / "serve_templates"
        Server(command, host=args.host, port=args.port, title="stamina-tui", templates_path=templates).serve()
        return 0
    from tui.app import make_app

    app = make_app(path)
    app.run()
    # Textual prints an uncaught exception's traceback once the terminal is restored, and sets return_code:
    # a crash must not look like a clean quit to the shell, tmux or textual-serve.
    return app.return_code or 0


if __name__ == "__main__":
    sys.exit(main())
