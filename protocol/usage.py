"""The argument parser every command line here shares, so a usage error reads the same everywhere.

argparse's own `error` prints the whole usage block before the message; ours prints one line that ends in
`(see --help)` and exits with status 2. `staminad` and `stamina-tui` both build on it; it lives in `protocol`
because that is the one layer both may import.
"""

from __future__ import annotations

import argparse
import re
from typing import NoReturn

_INTEGER = re.compile(r"-?[0-9]+")


class OneLineParser(argparse.ArgumentParser):
    """An `ArgumentParser` whose usage errors are `PROG: error: MESSAGE (see --help)`, exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


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
