"""`staminad start`: the service in the foreground (its clients are `commands.clients`)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from protocol.paths import resolve_state_dir, state_dir_flag
from staminad.commands.args import (
    CommandError,
    UsageError,
    add_engine_flag,
    bounded_int,
    check_engines,
    check_store,
    integer,
    ip_address,
)
from staminad.sandbox.runtimes import RUNTIME_CHOICES, RUNTIME_HELP
from staminad.suite.niceness import DEFAULT as DEFAULT_NICE
from staminad.suite.niceness import DEFAULT_RAISE, raise_daemon, raised, set_child_nice

if TYPE_CHECKING:
    from staminad.daemon.service import Daemon


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    s = sub.add_parser("start", help="run the daemon in the foreground (systemd-friendly)")
    _state(s)
    s.add_argument("--socket-mode", help="octal mode of the control socket (default 600, or 660 with --socket-group)")
    s.add_argument(
        "--socket-group",
        help="group that may use the daemon: it gets the control socket and the state directory (mode 2750)",
    )
    s.add_argument("--runtime", choices=RUNTIME_CHOICES, help=f"override every sweep's runtime ({RUNTIME_HELP})")
    s.add_argument("--parallel", type=bounded_int(1, 100_000), default=64, help="global limit on concurrent scenarios")
    add_engine_flag(
        s,
        "a Docker engine to spread sweeps over (repeat for several; unix://, tcp:// or ssh:// URLs; "
        "a sweep's own [run] engines win); sandboxes then keep their files in the engines' volumes",
    )
    s.add_argument("--metrics-port", type=integer, help="serve Prometheus metrics on 127.0.0.1:PORT")
    s.add_argument(
        "--metrics-host",
        type=ip_address,
        default="127.0.0.1",
        metavar="ADDRESS",
        help="the address the metrics listen on (default 127.0.0.1; an address of this host that a Prometheus "
        "elsewhere reaches, or 0.0.0.0 for all: the metrics name sweeps, models and endpoints, so firewall it)",
    )
    s.add_argument(
        "--suite-parallel", type=integer, help="limit on concurrent server starts + suites (default 4 x cores)"
    )
    s.add_argument(
        "--workers",
        type=bounded_int(0, 1024),
        help="worker processes for suites and their generation (default: usable CPUs less one, at least 2; "
        "0: run them in threads of the daemon)",
    )
    _priority_args(s)
    s.add_argument(
        "--max-connections",
        type=bounded_int(1, 65536),
        help="open control connections served at once (default: fits the file-descriptor limit)",
    )
    s.add_argument(
        "--idle-timeout",
        type=bounded_int(1, 86400),
        default=300,
        help="seconds a control connection may stay silent after its hello (default 300)",
    )
    s.add_argument(
        "--stop-timeout",
        type=bounded_int(1, 86400),
        help="seconds the sweeps get to clean up on a stop; then the daemon exits whatever still waits (default 60)",
    )
    s.set_defaults(func=start_cmd)


def _priority_args(s: argparse.ArgumentParser) -> None:
    """--child-nice and --raise-priority: how the control plane gets a core first under load."""
    s.add_argument(
        "--child-nice",
        type=bounded_int(0, 19),
        default=DEFAULT_NICE,
        help="niceness of agents, servers and suite workers below the daemon's, so its control plane gets a core "
        f"first under load; slows them where other work shares the cores (default {DEFAULT_NICE}: the daemon's own)",
    )
    s.add_argument(
        "--raise-priority",
        type=bounded_int(0, 39),
        default=DEFAULT_RAISE,
        metavar="N",
        help="run the daemon N niceness levels above the default where the OS allows (root or CAP_SYS_NICE) and "
        "what it starts (agents, servers, suite workers) at the default, so the control plane gets a core first "
        f"under load (default {DEFAULT_RAISE}; 0: off)",
    )


def _state(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--state-dir", type=state_dir_flag, default=None, help="default: $STAMINAD_STATE_DIR or XDG state home"
    )


def _state_dir(args: argparse.Namespace) -> Path:
    return resolve_state_dir(args.state_dir)


def _socket_mode(args: argparse.Namespace) -> int:
    """The control socket's mode from --socket-mode and --socket-group, or a one-line usage error."""
    try:
        mode = int(args.socket_mode, 8) if args.socket_mode else 0o660 if args.socket_group else 0o600
    except ValueError:
        raise UsageError(f"--socket-mode {args.socket_mode!r} is not an octal mode such as 600") from None
    if not 0 <= mode <= 0o777:
        raise UsageError(f"--socket-mode {args.socket_mode} is not a file mode such as 600 (at most 777)")
    if args.socket_group and not mode & 0o020:
        raise UsageError(
            f"--socket-mode {args.socket_mode} gives group {args.socket_group!r} no way in (connecting takes write "
            "permission on the socket): use 660, or leave it out"
        )
    if args.socket_group:
        import grp

        try:
            grp.getgrnam(args.socket_group)
        except KeyError:
            raise UsageError(f"--socket-group {args.socket_group!r} is not a group on this machine") from None
    return mode


def start_cmd(args: argparse.Namespace) -> int:
    from staminad.daemon.heap import settle
    from staminad.daemon.service import Daemon, DaemonError

    mode = _socket_mode(args)
    if args.metrics_port is not None and not 1 <= args.metrics_port <= 65535:
        raise UsageError(f"--metrics-port {args.metrics_port} is not a port number")
    if args.suite_parallel is not None and args.suite_parallel < 1:
        raise UsageError("--suite-parallel must be at least 1")
    set_child_nice(args.child_nice)
    daemon = Daemon(
        _state_dir(args),
        mode,
        args.socket_group,
        args.runtime,
        args.parallel,
        args.metrics_port,
        args.suite_parallel,
        args.max_connections,
        float(args.idle_timeout),
        engines=check_engines(args.engines),
        workers=args.workers,
        metrics_host=args.metrics_host,
    )
    daemon.stop_timeout = float(args.stop_timeout or daemon.stop_timeout)
    try:
        daemon.acquire()
    except DaemonError as exc:
        raise CommandError(str(exc)) from None
    check_store(daemon.state_dir / "staminad.db", migrating=True)
    raise_daemon(args.raise_priority)  # before any thread: they inherit it
    if args.raise_priority and not raised():
        print(
            "staminad: running at the default CPU priority (raising it needs root or CAP_SYS_NICE; "
            "--child-nice lowers the agents instead)",
            file=sys.stderr,
            flush=True,
        )
    settle()  # what start-up built lives as long as the daemon: out of every later collection's walk
    anyio.run(_serve, daemon)
    return 0


async def _serve(daemon: Daemon) -> None:
    """Serve until a stop; SIGTERM or SIGINT stops it gracefully, a second SIGINT exits at once."""

    async def signals() -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as received:
            count = 0
            async for signum in received:
                count += 1
                if count > 1 and signum == signal.SIGINT:
                    print("staminad: second interrupt, exiting now", file=sys.stderr, flush=True)
                    os._exit(130)
                print(
                    "staminad: stopping (harnesses keep running; a restart picks them up)", file=sys.stderr, flush=True
                )
                daemon.stop()

    async with anyio.create_task_group() as tg:
        tg.start_soon(signals)
        await daemon.serve()  # returns once a stop (graceful or draining) has completed
        tg.cancel_scope.cancel()
