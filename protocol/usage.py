"""The argument parser every command line here shares, so a usage error reads the same everywhere.

argparse's own `error` prints the whole usage block before the message; ours prints one line that ends in
`(see --help)` and exits with status 2. `staminad` and `stamina-tui` both build on it; it lives in `protocol`
because that is the one layer both may import.
"""

from __future__ import annotations

import argparse
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """An `ArgumentParser` whose usage errors are `PROG: error: MESSAGE (see --help)`, exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


__all__ = ["OneLineParser"]
