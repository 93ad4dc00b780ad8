"""`staminad validate`, `reference serve` and `suite run`: the oracle and the suite by hand."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import msgspec

from staminad.bench.pack import Pack
from staminad.bench.scenario import ScenarioParams
from staminad.commands.args import UsageError, bounded_int, one_seed, seconds, seed_list
from staminad.packio import read_pack
from staminad.reference.mutants import MUTANT_BY_BUG
from staminad.reference.server import SERVER_BUGS, App, make_server, serve
from staminad.suite.feedback import LEVELS, render_feedback
from staminad.suite.generate import generate_suite
from staminad.suite.history import state_and_history
from staminad.suite.http11 import Http11Transport
from staminad.suite.runner import run_suite_blocking


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    v = sub.add_parser("validate", help="reference agent must pass every turn; every mutant must be caught")
    v.add_argument("--seeds", type=seed_list, default=seed_list("0-9"))
    v.add_argument("--turns", type=bounded_int(0, 10_000), default=100)
    v.add_argument("--pack", type=Path, help="validate this pack's scenarios instead of generating")
    v.add_argument("--sampler", choices=("uniform", "weighted"), default="uniform")
    v.add_argument("--naming", choices=("programmatic", "themed"), default="themed")
    v.add_argument("--agents", help="comma-separated: reference and/or mutant bugs (default: all)")
    v.add_argument("--jobs", type=bounded_int(1, 256), default=os.cpu_count() or 1)
    v.add_argument("--json", action="store_true")
    v.set_defaults(func=validate_cmd)

    r = sub.add_parser("reference", help="the reference server")
    rsub = r.add_subparsers(dest="reference_cmd", required=True)
    s = rsub.add_parser("serve", help="serve one turn's design with the reference server")
    _turn_args(s)
    s.add_argument("--port", type=bounded_int(1, 65535), required=True)
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--bug", choices=sorted(SERVER_BUGS), help="serve a mutant instead")
    s.set_defaults(func=serve_cmd)

    su = sub.add_parser("suite", help="generated test suites")
    susub = su.add_subparsers(dest="suite_cmd", required=True)
    run = susub.add_parser("run", help="run one turn's suite against a running server and print the feedback")
    _turn_args(run)
    run.add_argument("--url", required=True, help="e.g. http://127.0.0.1:8000")
    run.add_argument("--feedback", choices=LEVELS, default="detailed")
    run.add_argument("--timeout", type=seconds, default=5.0, help="seconds per request")
    run.set_defaults(func=suite_run_cmd)


def _turn_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pack", type=Path, required=True)
    p.add_argument("--seed", type=one_seed, required=True)
    p.add_argument("--turn", type=bounded_int(0, 100_000), required=True)


def _state(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    pack = read_pack(args.pack)
    scenario = pack.scenario(args.seed)
    if args.turn > len(scenario.turns):
        raise UsageError(f"--turn {args.turn} is beyond this pack's {len(scenario.turns)} turns")
    return state_and_history(scenario, args.turn)


def serve_cmd(args: argparse.Namespace) -> int:
    state, _ = _state(args)
    app = App({"schema": msgspec.to_builtins(state), "bugs": [args.bug] if args.bug else []})
    try:
        server = make_server(app, args.host, args.port)
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    print(f"reference server for seed {args.seed} turn {args.turn} on http://{args.host}:{args.port}", flush=True)
    serve(server)
    return 0


def suite_run_cmd(args: argparse.Namespace) -> int:
    try:
        transport = Http11Transport.for_url(args.url, args.timeout)
    except ValueError as exc:
        raise UsageError(f"--url: {exc} (e.g. http://127.0.0.1:8000)") from None
    state, history = _state(args)
    suite = generate_suite(state, args.seed, args.turn, history)

    with transport:
        result = run_suite_blocking(suite, transport)
    n, bad = len(result.results), len(result.failures)
    rate = result.requests / result.seconds if result.seconds else 0.0
    if bad:
        sys.stdout.write(render_feedback(result, args.feedback))
    print(f"{n - bad}/{n} tests passed in {result.seconds:.2f} s ({result.requests} requests, {rate:.0f}/s)")
    return 0 if not bad else 1


def validate_cmd(args: argparse.Namespace) -> int:
    from staminad.validate import (
        ALL_AGENTS,
        class_coverage,
        class_gate,
        render_class_gate,
        render_gate,
        rule_gate,
        scenarios_for,
        validate,
        verdicts,
    )

    agents = ALL_AGENTS if not args.agents else list(dict.fromkeys(a.strip() for a in args.agents.split(",")))
    unknown = [a for a in agents if a != "reference" and a not in MUTANT_BY_BUG]
    if unknown:
        raise UsageError(f"unknown agent {unknown[0]!r}; choose from {', '.join(ALL_AGENTS)}")
    pack: Pack | None = read_pack(args.pack) if args.pack else None
    params = pack.params if pack else ScenarioParams(turns=args.turns, sampler=args.sampler, naming=args.naming)
    seeds = list(pack.manifest.seeds) if pack and args.seeds == seed_list("0-9") else args.seeds
    scenarios = scenarios_for(seeds, params, pack)
    outcomes = validate(scenarios, params.language, agents, args.jobs)
    table = verdicts(outcomes, params.turns)
    gate = rule_gate(outcomes, complete=set(ALL_AGENTS) <= set(agents))
    classes = class_gate(class_coverage(scenarios, args.jobs))
    ok = gate.ok and classes.ok and all(v.ok for v in table)
    if args.json:
        print(
            json.dumps(
                {
                    "ok": ok,
                    "gate": msgspec.to_builtins(gate),
                    "classes": msgspec.to_builtins(classes),
                    "verdicts": msgspec.to_builtins(table),
                    "outcomes": msgspec.to_builtins(outcomes),
                }
            )
        )
    else:
        print(f"validate: {len(seeds)} scenarios x {params.turns} turns")
        width = max(len(v.agent) for v in table)
        for v in table:
            print(f"{'ok  ' if v.ok else 'FAIL'}  {v.agent:<{width}}  {v.summary}")
        print()
        print(render_gate(gate))
        print()
        print(render_class_gate(classes))
    return 0 if ok else 1
