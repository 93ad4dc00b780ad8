"""`staminad` entry point: builds the argument parser and turns user errors into one line, exit 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from staminad.bench.changes import ChangeError
from staminad.bench.pack import PackError
from staminad.commands import daemon, image, oracle, report, run, scenario, view
from staminad.commands.args import UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="staminad", description="StaminaBench: how long do coding agents stay correct?")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    scenario.add_parsers(sub)
    oracle.add_parsers(sub)
    run.add_parsers(sub)
    image.add_parsers(sub)
    report.add_parsers(sub)
    daemon.add_parsers(sub)
    view.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (UsageError, PackError, ChangeError) as exc:
        print(f"staminad: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
