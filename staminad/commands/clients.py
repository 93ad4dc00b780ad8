"""`staminad submit|status|cancel|pause|resume|stop|retry|logs`: the daemon's clients, over its control socket.

Building their parsers imports neither the engine nor the daemon (`staminad status` starts light); `submit`
reads the sweep file with the engine's reader when it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

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
from staminad.commands.args import CommandError, UsageError, bounded_int, one_seed
from staminad.commands.eventlines import event_line
from state.lock import lock_holder

if TYPE_CHECKING:
    from protocol.client import Client

# Each client subcommand and its help line (staminad.cli.COMMANDS lists the same).
CLIENTS = (
    ("submit", "submit a sweep file"),
    ("status", "sweeps and their progress"),
    ("cancel", "cancel a sweep"),
    ("pause", "pause a sweep after running attempts"),
    ("resume", "resume a paused sweep"),
    ("stop", "stop the daemon"),
    ("retry", "give a scenario that used up its infra retries another round"),
    ("logs", "stream events"),
)


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    for name, helptext in CLIENTS:
        p = sub.add_parser(name, help=helptext)
        state_flag(p)
        p.add_argument("--json", action="store_true", help="machine-readable output")
        ARGUMENTS[name](p)
        p.set_defaults(func=client_cmd, command_name=name)


def _submit_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("sweep", type=Path)
    p.add_argument(
        "--force-new",
        action="store_true",
        help="replace a stored sweep of the same name whose configuration differs",
    )
    p.add_argument("--paused", action="store_true", help="queue the sweep paused: nothing runs until `resume`")


def _retry_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("sweep")
    p.add_argument("configuration")
    p.add_argument("seed", type=one_seed)


def _logs_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("sweeps", nargs="*")
    p.add_argument("--count", type=bounded_int(0, 10**9), default=0, help="stop after this many events (0: never)")
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


# A client subcommand -> the arguments it takes besides --state-dir and --json.
ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], object]] = {
    "submit": _submit_args,
    "cancel": lambda p: p.add_argument("sweep"),
    "pause": lambda p: p.add_argument("sweep"),
    "resume": lambda p: p.add_argument("sweep"),
    "status": lambda p: p.add_argument("sweep", nargs="?"),
    "retry": _retry_args,
    "stop": lambda p: p.add_argument("--drain", action="store_true", help="let running attempts finish first"),
    "logs": _logs_args,
}


def _event_kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = sorted(set(kinds) - KIND_NAMES)
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown event kind {', '.join(unknown)}; known: {', '.join(sorted(KIND_NAMES))}"
        )
    return kinds


def state_flag(p: argparse.ArgumentParser) -> None:
    """`--state-dir`, which every daemon command takes."""
    p.add_argument(
        "--state-dir", type=state_dir_flag, default=None, help="default: $STAMINAD_STATE_DIR or XDG state home"
    )


def _state_dir(args: argparse.Namespace) -> Path:
    return resolve_state_dir(args.state_dir)


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
    return lines + [f"  {w.line}" for w in info.waiting]  # manual scenarios: where the person's prompt is


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


async def _logs(client: Client, args: argparse.Namespace) -> int:
    """`staminad logs`: the events of the named sweeps (every sweep's without one), as they come."""
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


def client_cmd(args: argparse.Namespace) -> int:
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
                return await _logs(client, args)
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
