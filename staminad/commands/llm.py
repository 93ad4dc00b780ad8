"""`staminad llm check`: one tool-calling request per protocol to each model of a sweep file, before it runs."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import anyio

from staminad.commands.args import UsageError, seconds


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("llm", help="the models a sweep runs on")
    lsub = p.add_subparsers(dest="llm_cmd", required=True)
    c = lsub.add_parser(
        "check",
        help="send one tool-calling request per protocol each model lists to its endpoint and say what works",
    )
    c.add_argument("sweep", type=Path, help="the sweep file whose [llm] models to check")
    c.add_argument("--model", action="append", default=[], help="check only this model (repeatable)")
    c.add_argument("--timeout", type=seconds, default=60.0, help="seconds each request may take (default 60)")
    c.set_defaults(func=check_cmd)


def check_cmd(args: argparse.Namespace) -> int:
    from staminad.engine.config import load_sweep
    from staminad.engine.models import sweep_models
    from staminad.gateway.check import check_all, format_probes

    sweep, _ = load_sweep(args.sweep)
    models = sweep_models(sweep.llm)
    if not models:
        raise UsageError(f"{args.sweep} has no [llm] table: it names no model to check")
    if unknown := [m for m in args.model if m not in {x.name for x in models}]:
        raise UsageError(f"--model {unknown[0]!r} is not one of {', '.join(m.name for m in models)}")
    if args.model:
        models = [m for m in models if m.name in args.model]
    keys = {m.name: os.environ.get(m.api_key_env, "") if m.api_key_env else "" for m in models}
    missing = [f"{m.name} (${m.api_key_env})" for m in models if m.api_key_env and not keys[m.name]]
    probes = anyio.run(check_all, models, keys, args.timeout, backend="asyncio")
    print(format_probes(probes))
    if missing:
        print(f"no key in the environment for: {', '.join(missing)}")
    failed = sum(not p.ok for p in probes)
    print(f"{len(probes) - failed} of {len(probes)} work" + ("" if not failed else "; fix the FAIL lines first"))
    return 1 if failed else 0
