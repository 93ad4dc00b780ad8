"""`staminad image build`: the offline sandbox image."""

from __future__ import annotations

import argparse

from staminad.commands.args import UsageError
from staminad.sandbox.image import LAYERS, ImageError, build


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("image", help="sandbox images")
    isub = p.add_subparsers(dest="image_cmd", required=True)
    b = isub.add_parser("build", help="build the sandbox image from Debian packages (no registry needed)")
    b.add_argument("--layer", choices=sorted(LAYERS), default="base")
    b.add_argument("--suite", default="bookworm", help="Debian suite")
    b.add_argument("--mirror", help="Debian mirror URL (default: mmdebstrap's)")
    b.set_defaults(func=build_cmd)


def build_cmd(args: argparse.Namespace) -> int:
    try:
        tag, built = build(args.layer, args.suite, args.mirror)
    except ImageError as exc:
        raise UsageError(str(exc)) from None
    print(f"{'built' if built else 'already built'}: {tag}")
    return 0
