"""`staminad scenario generate|show`: make a scenario pack and look inside one."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from staminad.bench.changes import transition
from staminad.bench.pack import Pack
from staminad.bench.readme import LANGUAGE_NAMES
from staminad.bench.scenario import ScenarioParams
from staminad.commands.args import CommandError, UsageError, bounded_int, one_seed, seed_list
from staminad.packio import read_pack, write_pack


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("scenario", help="generate and inspect scenario packs")
    ssub = p.add_subparsers(dest="scenario_cmd", required=True)
    g = ssub.add_parser("generate", help="write a scenario pack")
    g.add_argument("--seeds", type=seed_list, default=seed_list("0-19"), help="e.g. 0-19 or 1,4,7 (default 0-19)")
    g.add_argument("--turns", type=bounded_int(0, 100_000), default=100)
    g.add_argument(
        "--sampler",
        choices=("uniform", "weighted", "llm"),
        default="uniform",
        help="llm: a model proposes the initial design and each turn (needs --llm-endpoint, --llm-model)",
    )
    g.add_argument("--llm-endpoint", help="with --sampler llm: an OpenAI-compatible base URL")
    g.add_argument("--llm-model", help="with --sampler llm: the model name")
    g.add_argument("--llm-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key")
    g.add_argument(
        "--llm-attempts",
        type=bounded_int(1, 20),
        default=3,
        help="proposals per step before drawing that step procedurally (default 3)",
    )
    g.add_argument("--naming", choices=("programmatic", "themed"), default="themed")
    g.add_argument("--changes-per-turn", type=bounded_int(1, 50), default=5)
    g.add_argument(
        "--language",
        choices=sorted(LANGUAGE_NAMES),
        default="python",
        help="implementation language named in the texts",
    )
    g.add_argument("-o", "--out", type=Path, required=True, help="directory to write the pack to")
    g.set_defaults(func=generate)
    s = ssub.add_parser("show", help="summarise a pack, or print one turn's texts")
    s.add_argument("pack", type=Path)
    s.add_argument("--seed", type=one_seed)
    s.add_argument("--turn", type=bounded_int(0, 100_000))
    s.set_defaults(func=show)
    o = ssub.add_parser("openapi", help="print an OpenAPI 3.1 document for one turn's design")
    o.add_argument("--pack", type=Path, required=True)
    o.add_argument("--seed", type=one_seed, required=True)
    o.add_argument("--turn", type=bounded_int(0, 100_000), required=True)
    o.set_defaults(func=openapi_cmd)


def generate(args: argparse.Namespace) -> int:
    from staminad.bench.pack import build_pack

    _prepare_out(args.out)  # before generating: a bad -o must not cost the generation
    params = ScenarioParams(
        turns=args.turns,
        sampler=args.sampler,
        naming=args.naming,
        changes_per_turn=args.changes_per_turn,
        language=args.language,
    )
    if args.sampler != "llm":
        files = build_pack(args.seeds, params)
    else:
        files = _llm_pack(args, params)
    try:
        write_pack(args.out, files)
    except OSError as exc:
        raise CommandError(
            f"writing the pack to {args.out} failed: {exc.strerror or exc}"
            f"{f' ({exc.filename})' if exc.filename else ''}"
        ) from None
    print(f"wrote {len(files)} files for {len(args.seeds)} scenarios x {args.turns} turns to {args.out}")
    return 0


def _prepare_out(out: Path) -> None:
    """Create the pack directory and check it takes files, or refuse `-o` in one line."""
    import os
    import tempfile

    if out.is_dir() and not (out / "manifest.json").exists() and any(out.iterdir()):
        raise UsageError(f"-o {out} already holds other files; use an empty directory (or an existing pack's)")
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=out, prefix=".tmp-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"-o {out}: cannot write a pack there: {exc.strerror or exc}") from None


def _llm_pack(args: argparse.Namespace, params: ScenarioParams) -> dict[str, bytes]:
    import os

    import anyio

    from staminad.bench.pack import build_pack
    from staminad.llmsample import LLMSamplingError, llm_scenarios

    if not args.llm_endpoint or not args.llm_model:
        raise UsageError("--sampler llm needs --llm-endpoint URL and --llm-model NAME")
    if not args.llm_endpoint.startswith(("http://", "https://")):
        raise UsageError(f"--llm-endpoint {args.llm_endpoint!r} is not an http(s) URL")
    try:
        scenarios, sampling = anyio.run(
            llm_scenarios,
            list(args.seeds),
            params,
            args.llm_endpoint,
            args.llm_model,
            os.environ.get(args.llm_key_env, ""),
            args.llm_attempts,
        )
    except LLMSamplingError as exc:  # the endpoint is down or answers nonsense: the command line was fine
        raise CommandError(str(exc)) from None
    print(
        f"{sampling.proposals} proposals, {sampling.rejected} rejected as invalid, {sampling.fallbacks} steps "
        "drawn procedurally"
    )
    return build_pack(args.seeds, params, scenarios, sampling)


def _summary(pack: Pack, seed: int) -> str:
    scenario = pack.scenario(seed)
    lines = [f"seed {seed}:  turn  entities  fields  relationships  analytics  actions  enums"]
    state = scenario.initial
    for t in range(len(scenario.turns) + 1):
        if t:
            state = transition(state, scenario.turns[t - 1])
        n_fields = sum(len(e.fields) for e in state.entities)
        lines.append(
            f"{'':9}{t:5}  {len(state.entities):8}  {n_fields:6}  {state.relationship_count():13}  "
            f"{len(state.analytics):9}  {len(state.actions):7}  {len(state.enums):5}"
        )
    return "\n".join(lines)


def show(args: argparse.Namespace) -> int:
    pack = read_pack(args.pack)
    p = pack.params
    if args.turn is not None:
        if args.seed is None:
            raise UsageError("--turn needs --seed")
        pack.scenario(args.seed)  # validates the seed
        if args.turn == 0:
            sys.stdout.write(f"=== README.md ===\n{pack.readme()}\n=== initial_specification.md ===\n")
            sys.stdout.write(pack.text(f"scenarios/seed-{args.seed:05d}/texts/initial_specification.md"))
            sys.stdout.write("\n=== prompt ===\n")
        sys.stdout.write(pack.prompt(args.seed, args.turn))
        return 0
    print(
        f"pack {args.pack}: {len(pack.manifest.seeds)} scenarios, {p.turns} turns, sampler {p.sampler}, "
        f"naming {p.naming}, {p.changes_per_turn} changes per turn, language {p.language}, "
        f"generator {pack.manifest.generator_version}"
    )
    for seed in [args.seed] if args.seed is not None else pack.manifest.seeds:
        print(_summary(pack, seed))
    return 0


def openapi_cmd(args: argparse.Namespace) -> int:
    import json

    from staminad.bench.openapi import openapi

    scenario = read_pack(args.pack).scenario(args.seed)
    if args.turn > len(scenario.turns):
        raise UsageError(f"--turn {args.turn} is beyond this pack's {len(scenario.turns)} turns")
    print(
        json.dumps(openapi(scenario.state_at(args.turn), f"StaminaBench seed {args.seed} turn {args.turn}"), indent=2)
    )
    return 0
