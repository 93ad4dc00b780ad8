"""`staminad image build` (the offline sandbox image and harness layers) and `staminad agents list`."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from staminad.commands.args import UsageError
from staminad.sandbox.docker.image import LAYERS, ImageError, build, build_harness, image_exists


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from staminad.agents.harnesses import HARNESSES

    p = sub.add_parser("image", help="sandbox images")
    isub = p.add_subparsers(dest="image_cmd", required=True)
    b = isub.add_parser("build", help="build the sandbox image from Debian packages (no registry needed)")
    b.add_argument("--layer", choices=sorted(LAYERS), default="base")
    b.add_argument(
        "--harness", choices=sorted(HARNESSES), help="build this harness's layer on top of the base image instead"
    )
    b.add_argument("--suite", default="bookworm", help="Debian suite")
    b.add_argument("--mirror", help="Debian mirror URL (default: mmdebstrap's)")
    b.set_defaults(func=build_cmd)
    lock = isub.add_parser(
        "lock-stacks",
        help="pin the web stacks' dependencies anew (from PyPI) after a version changed in bench.environment",
    )
    lock.set_defaults(func=lock_stacks_cmd)
    a = sub.add_parser("agents", help="agents and harnesses")
    asub = a.add_subparsers(dest="agents_cmd", required=True)
    lst = asub.add_parser("list", help="every adapter with its version and whether its image is built")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=agents_list_cmd)


def build_cmd(args: argparse.Namespace) -> int:
    from staminad.agents.layers import layer_spec

    try:
        if args.harness:
            with tempfile.TemporaryDirectory(prefix="staminabench-layer-") as tmp:
                tag, built = build_harness(layer_spec(args.harness), Path(tmp))
        else:
            tag, built = build(args.layer, args.suite, args.mirror)
    except ImageError as exc:
        raise UsageError(str(exc)) from None
    print(f"{'built' if built else 'already built'}: {tag}")
    return 0


def lock_stacks_cmd(args: argparse.Namespace) -> int:
    from staminad.sandbox.docker import stacks
    from staminad.sandbox.docker.image import SUITES, wheel_target

    try:
        found = stacks.relock(wheel_target(SUITES["bookworm"]))
    except stacks.StackError as exc:
        raise UsageError(str(exc)) from None
    stacks.write_lock(found, "pip's resolution of bench.environment.PYTHON_PACKAGES for bookworm's CPython 3.11")
    print(f"{stacks.LOCK}: {len(found)} pins")
    return 0


def agents_list_cmd(args: argparse.Namespace) -> int:
    from staminad.agents.base import list_adapters
    from staminad.agents.harnesses import HARNESSES
    from staminad.agents.layers import layer_tag
    from staminad.sandbox.docker.image import recipe

    base = recipe().tag()
    base_built = image_exists(base)
    rows = []
    for adapter in list_adapters():
        if adapter.harness is not None:
            tag = layer_tag(adapter.harness)
            kind, built = "harness", image_exists(tag)
        else:
            kind = "fault" if adapter.fault else "mutant" if adapter.bug else "builtin"
            tag, built = base, base_built
        rows.append(
            {
                "agent": adapter.name,
                "kind": kind,
                "version": adapter.version,
                "base": base,
                "image": tag,
                "image_built": built,
                "description": adapter.description,
                "protocol": HARNESSES[adapter.harness].protocol if adapter.harness is not None else "",
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(str(r["agent"])) for r in rows)
    print(f"{'agent':<{width}}  {'kind':<8} {'version':<11} {'base image':<33} {'layer':<9}  description")
    for r in rows:
        state = "built" if r["image_built"] else "not built"
        speaks = f"speaks {r['protocol']}; " if r["protocol"] else ""
        print(
            f"{r['agent']:<{width}}  {r['kind']:<8} {r['version']:<11} {r['base']:<33} {state:<9}  "
            f"{speaks}{r['description']}"
        )
    return 0
