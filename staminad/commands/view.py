"""`staminad view`: the read-only web viewer over a state directory's store."""

from __future__ import annotations

import argparse
from pathlib import Path

from protocol.paths import resolve_state_dir, state_dir_flag
from staminad.commands.args import UsageError, bounded_int


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    v = sub.add_parser("view", help="browse sweeps, scenarios and attempts in a web page (read-only)")
    v.add_argument("--state-dir", type=state_dir_flag)
    v.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1); any other than loopback gets a token",
    )
    v.add_argument("--port", type=bounded_int(0, 65535), default=8570, help="TCP port (default 8570; 0 picks one)")
    v.add_argument("--socket", type=Path, help="listen on this Unix socket (mode 0600) instead of TCP")
    v.set_defaults(func=view_cmd)


def view_cmd(args: argparse.Namespace) -> int:
    from staminad.viewer.serve import ViewError, serve

    state_dir = resolve_state_dir(args.state_dir)
    try:
        serve(state_dir, args.host, args.port, args.socket, lambda line: print(line, flush=True))
    except ViewError as exc:
        raise UsageError(str(exc)) from None
    return 0
