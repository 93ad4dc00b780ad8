"""The argument parser every command line here shares, so a usage error reads the same everywhere.

argparse's own `error` prints the whole usage block before the message; ours prints one line that ends in
`(see --help)` and exits with status 2. `staminad` and `stamina-tui` both build on it; it lives in `protocol`
because that is the one layer both may import.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

_INTEGER = re.compile(r"-?[0-9]+")


class OneLineParser(argparse.ArgumentParser):
    """An `ArgumentParser` whose usage errors are `PROG: error: MESSAGE (see --help)`, exit status 2."""

    _given: list[str] | None = None  # what this parser (or subcommand) was asked to parse

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[Any, list[str]]:
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        if message.startswith("the following arguments are required") and (unknown := self._unknown()):
            message = f"unrecognized arguments: {' '.join(unknown)}"
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    def _unknown(self) -> list[str]:
        """The options given that this parser does not know. argparse names a missing required argument (a
        subcommand) before an unknown option, though the unknown one (`staminad --bogus`) is the mistake made:
        parsed again with nothing required, what is left over is named instead."""
        if self._given is None:
            return []
        required = [action for action in self._actions if action.required]
        for action in required:
            action.required = False
        try:
            _, extras = super().parse_known_args(self._given, argparse.Namespace())
        finally:
            for action in required:
                action.required = True
        return [e for e in extras if e.startswith("-") and not self._negative_number_matcher.match(e)]


def integer(text: str) -> int:
    """An argparse type for an integer in ASCII digits, an optional leading minus: `int()` alone would also take
    `1_0`, ` 5` and other scripts' digits (as seeds are refused in `staminad.bench.seeds`)."""
    try:
        if _INTEGER.fullmatch(text):
            return int(text)
    except ValueError:  # more digits than int() converts
        pass
    raise argparse.ArgumentTypeError(f"{text!r} is not an integer (digits 0-9 only)")


__all__ = ["OneLineParser", "integer"]
