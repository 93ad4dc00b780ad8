"""`staminad start|stop|submit|status|cancel|pause|resume|retry|logs`: the service and its clients."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

import anyio
import msgspec

from protocol import (
    Cancel,
    ErrorReply,
    GetSweep,
    ListSweeps,
    Ok,
    Pause,
    Resume,
    RetryScenario,
    Stop,
    Submit,
    Subscribe,
    SweepInfo,
)
from protocol.events import KIND_NAMES
from protocol.messages import RequestFor, SweepList
from protocol.paths import resolve_state_dir, state_dir_flag
from protocol.paths import socket_path as _socket_path
from protocol.units import span
from protocol.usage import hint
from staminad.commands.args import (
    CommandError,
    UsageError,
    bounded_int,
    check_engines,
    check_store,
    engine,
    integer,
    ip_address,
    one_seed,
)
from staminad.commands.eventlines import event_line
from staminad.engine.runtime import RUNTIME_CHOICES, RUNTIME_HELP
from staminad.suite.niceness import DEFAULT as DEFAULT_NICE
from staminad.suite.niceness import DEFAULT_RAISE, raise_daemon, raised, set_child_nice
from state.lock import lock_holder


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
    s.add_argument(
        "--engine",
        dest="engines",
        action="append",
        type=engine,
        default=[],
        metavar="URL[,slots=N][,tls=DIR][,gateway=IP]",
        help="a Docker engine to spread sweeps over (repeat for several; unix://, tcp:// or ssh:// URLs; "
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
        help="worker processes for suites and their generation (default: usable CPUs less one, at least 1; "
        "0: run them in threads of the daemon)",
    )
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
    for name, helptext in (
        ("submit", "submit a sweep file"),
        ("status", "sweeps and their progress"),
        ("cancel", "cancel a sweep"),
        ("pause", "pause a sweep after running attempts"),
        ("resume", "resume a paused sweep"),
        ("stop", "stop the daemon"),
        ("retry", "give a scenario that used up its infra retries another round"),
        ("logs", "stream events"),
    ):
        p = sub.add_parser(name, help=helptext)
        _state(p)
        p.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "submit":
            p.add_argument("sweep", type=Path)
            p.add_argument(
                "--force-new",
                action="store_true",
                help="replace a stored sweep of the same name whose configuration differs",
            )
            p.add_argument("--paused", action="store_true", help="queue the sweep paused: nothing runs until `resume`")
        elif name in ("cancel", "pause", "resume"):
            p.add_argument("sweep")
        elif name == "status":
            p.add_argument("sweep", nargs="?")
        elif name == "retry":
            p.add_argument("sweep")
            p.add_argument("configuration")
            p.add_argument("seed", type=one_seed)
        elif name == "stop":
            p.add_argument("--drain", action="store_true", help="let running attempts finish first")
        elif name == "logs":
            p.add_argument("sweeps", nargs="*")
            p.add_argument(
                "--count", type=bounded_int(0, 10**9), default=0, help="stop after this many events (0: never)"
            )
            p.add_argument(
                "--replay",
                type=bounded_int(0, 10**9),
                default=0,
                metavar="N",
                help="first show up to N recent events the daemon still holds",
            )
            p.add_argument(
                "--kinds",
                type=_event_kinds,
                default=(),
                metavar="K,K",
                help="only these event kinds, comma-separated (e.g. attempt_tested,infra_failure)",
            )
        p.set_defaults(func=client_cmd, command_name=name)


def _event_kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = sorted(set(kinds) - KIND_NAMES)
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown event kind {', '.join(unknown)}; known: {', '.join(sorted(KIND_NAMES))}"
        )
    return kinds


def _state(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--state-dir", type=state_dir_flag, default=None, help="default: $STAMINAD_STATE_DIR or XDG state home"
    )


def _state_dir(args: argparse.Namespace) -> Path:
    return resolve_state_dir(args.state_dir)


def start_cmd(args: argparse.Namespace) -> int:
    from staminad.daemon.heap import settle
    from staminad.daemon.service import Daemon, DaemonError

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
    if args.metrics_port is not None and not 1 <= args.metrics_port <= 65535:
        raise UsageError(f"--metrics-port {args.metrics_port} is not a port number")
    if args.suite_parallel is not None and args.suite_parallel < 1:
        raise UsageError("--suite-parallel must be at least 1")
    if args.socket_group:
        import grp

        try:
            grp.getgrnam(args.socket_group)
        except KeyError:
            raise UsageError(f"--socket-group {args.socket_group!r} is not a group on this machine") from None
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

    async def main() -> None:
        async with anyio.create_task_group() as tg:

            async def signals() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as received:
                    count = 0
                    async for signum in received:
                        count += 1
                        if count > 1 and signum == signal.SIGINT:
                            print("staminad: second interrupt, exiting now", file=sys.stderr, flush=True)
                            os._exit(130)
                        print(
                            "staminad: stopping (harnesses keep running; a restart picks them up)",
                            file=sys.stderr,
                            flush=True,
                        )
                        daemon.stop()

            tg.start_soon(signals)
            await daemon.serve()  # returns once a stop (graceful or draining) has completed
            tg.cancel_scope.cancel()

    settle()  # what start-up built lives as long as the daemon: out of every later collection's walk
    anyio.run(main)
    return 0


def _print_info(info: SweepInfo) -> None:
    for line in info_lines(info):
        print(line)


def info_lines(info: SweepInfo) -> list[str]:
    """`staminad status` for one sweep: a line for the sweep, one per configuration with its denominators.

    The figures are over the scored scenarios only (`staminad.engine.score`, the rule every view counts by);
    unfinished, never-run and unscored ones are counted apart, and a configuration with none scored shows `-`.
    Before the sweep ends, each configuration whose figures may still change says so. A sweep that failed
    says why on its line.
    """
    from staminad.engine.score import config_tally, counts_text, not_final, score_text

    slots = f" ({info.active} running of its parallel {info.parallel}, {info.queued} queued)" if info.parallel else ""
    reason = f": {info.reason}" if info.reason else ""
    expanding = f", expanding: {info.expanding} of {info.expand_total}" if info.expand_total else ""
    lines = [f"sweep {info.sweep}: {info.status}{slots}{expanding}{reason}"]
    for e in info.engines:
        health = "healthy" if e.healthy else f"not answering ({e.detail})" if e.detail else "not answering"
        slots = f"; {e.scenarios} of this sweep's scenarios, {e.used}/{e.slots} slots" if e.slots else ""
        down = f"; down for {span(time.time() - e.down_since)}, {e.waiting} scenarios paused" if e.down_since else ""
        lines.append(f"  engine {e.url}: {health}{slots}{down}")
    for c in info.configurations:
        t = config_tally(c)
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(c.statuses.items()))
        infra = ", ".join(f"{k} {v}" for k, v in sorted(c.infra.items())) or "-"
        spend = f", {c.tokens:,} tokens, {c.cost_text}" if c.tokens else ""
        note = not_final(t, info.status)
        lines.append(
            f"  {c.name}: turns passed {score_text(t, '+-')}, {counts_text(t)}; "
            f"{c.finished}/{c.scenarios} finished ({statuses}), infra: {infra}{spend}" + (f" [{note}]" if note else "")
        )
    return lines


def _request(name: str, args: argparse.Namespace, text: str) -> RequestFor[Ok | SweepInfo | SweepList]:
    """The request a one-answer client subcommand sends (`text`: the sweep file, for submit)."""
    if name == "submit":
        return Submit(
            sweep_toml=text,
            base_dir=str(args.sweep.resolve().parent),
            source=str(args.sweep),
            force_new=args.force_new,
            paused=args.paused,
        )
    if name == "status":
        return GetSweep(sweep=args.sweep) if args.sweep else ListSweeps()
    if name == "stop":
        return Stop(drain=args.drain)
    if name == "retry":
        return RetryScenario(sweep=args.sweep, configuration=args.configuration, seed=args.seed)
    return {"cancel": Cancel, "pause": Pause, "resume": Resume}[name](sweep=args.sweep)


def client_cmd(args: argparse.Namespace) -> int:  # noqa: C901 - one branch per client subcommand
    from protocol.client import Client, ClientError

    state_dir = _state_dir(args)
    socket_path = _socket_path(state_dir)
    name = args.command_name
    text = ""
    if name == "submit":  # the file is checked before the daemon is asked
        from staminad.engine.config import read_sweep

        try:
            text = read_sweep(args.sweep).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"{args.sweep} is not UTF-8 text (byte {exc.start}); a sweep is TOML") from None

    async def main() -> int:
        async with Client(socket_path) as client:
            if name == "logs":
                for sweep in args.sweeps:  # a typo would otherwise wait forever for events that never come
                    if isinstance(found := await client.request(GetSweep(sweep=sweep)), ErrorReply):
                        raise UsageError(found.message)
                reply = await client.request(Subscribe(sweeps=tuple(args.sweeps), kinds=args.kinds, replay=args.replay))
                if isinstance(reply, ErrorReply):
                    raise UsageError(reply.message)
                seen = 0
                async for event in client.events():
                    try:
                        if args.json:
                            print(json.dumps({**msgspec.to_builtins(event), "kind": event.kind}), flush=True)
                        else:
                            print(event_line(event), flush=True)
                    except BrokenPipeError:  # `logs | head`: the reader has all it wanted
                        # Python flushes stdout once more at exit: point it at nothing so that says nothing either.
                        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                        return 0
                    seen += 1
                    if args.count and seen >= args.count:
                        break
                return 0
            answer = await client.request(_request(name, args, text))
            if args.json:
                print(json.dumps(msgspec.to_builtins(answer)))
            elif isinstance(answer, Ok):
                print(answer.detail)
            elif isinstance(answer, SweepInfo):
                _print_info(answer)
            elif not isinstance(answer, ErrorReply):
                print(f"daemon: {answer.active} of {answer.limit} scenario slots in use")
                for info in answer.sweeps:
                    _print_info(info)
            if isinstance(answer, ErrorReply):  # the daemon says whether the request or the daemon was at fault
                raise (UsageError if answer.usage else CommandError)(answer.message)
            return 0

    try:
        return anyio.run(main)
    except ClientError as exc:
        holder = lock_holder(state_dir)
        if holder is not None and holder[1] == "run":  # no daemon to ask: a `staminad run` works on the dir
            raise CommandError(
                f"a `{hint('run')}` (pid {holder[0]}) holds {state_dir}, not a daemon: it answers no "
                f"`{hint(name)}`; its own output shows its progress, `{hint('report')}` its results"
            ) from None
        raise CommandError(str(exc)) from None
