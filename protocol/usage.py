"""The argument parser every command line here shares, so a usage error reads the same everywhere.

argparse's own `error` prints the whole usage block before the message; ours prints one line that ends in
`(see --help)` and exits with status 2. `staminad` and `stamina-tui` both build on it; it lives in `protocol`
because that is the one layer both may import.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

_INTEGER = re.compile(r"-?[0-9]+")

# Set by `./sb` (to `./sb`) so every usage line and hint names the program as the user invoked it: `staminad`
# is not on PATH in a clone where the user typed `./sb`.
PROG_ENV = "STAMINAD_PROG"


def program() -> str:
    """The name `staminad` was invoked by: `$STAMINAD_PROG` (`./sb` sets it), else `staminad`."""
    name = os.environ.get(PROG_ENV, "").strip()
    return name if name and len(name) <= 200 and name.isprintable() else "staminad"


def hint(command: str) -> str:
    """A command line to suggest, e.g. `hint("image build")` -> `./sb image build` when run through `./sb`."""
    return f"{program()} {command}"


def close_match(word: str, choices: Iterable[object]) -> str | None:
    """The one choice `word` most likely misspells (difflib's closest at 0.6 or better), or None."""
    found = difflib.get_close_matches(word, [str(c) for c in choices], n=1)
    return found[0] if found else None


def did_you_mean(word: str, choices: Iterable[object]) -> str:
    """`; did you mean 'report'?` to append to an error about `word`, or "" when nothing is close."""
    found = close_match(word, choices)
    return f"; did you mean {found!r}?" if found else ""


class OneLineParser(argparse.ArgumentParser):
    """An `ArgumentParser` whose usage errors are `PROG: error: MESSAGE (see --help)`, exit status 2."""

    _given: list[str] | None = None  # what this parser (or subcommand) was asked to parse

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[Any, list[str]]:
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's check, with `did you mean 'report'?` for a near miss of a subcommand or a choice."""
        choices = action.choices
        if choices is None or value in choices or not isinstance(value, str):
            super()._check_value(action, value)
            return
        shown = ", ".join(repr(c) for c in choices)
        found = close_match(value, choices)
        if found is not None:
            message = f"invalid choice: {value!r}; did you mean {found!r}? (choose from {shown})"
        else:
            message = f"invalid choice: {value!r} (choose from {shown})"
        raise argparse.ArgumentError(action, message)

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


def options_after_command(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """`argv` with the subcommands' options given before the subcommand moved after it, so global options such as
    `--state-dir DIR` are taken anywhere: `staminad --state-dir D report` parses as `staminad report --state-dir D`.

    The top parser's own options (`--help`, `--version`) stay where they are; an option the top parser does not
    know takes the next word as its value when some subcommand's option of that name takes one. Anything else
    (no subcommand found, a stray word first, `--`) leaves `argv` as it is, for argparse to judge."""
    args = list(argv)
    sub = _subcommands(parser)
    if sub is None:
        return args
    own = {o for a in parser._actions for o in a.option_strings}
    takes_value = _options_taking_a_value(sub)
    kept: list[str] = []
    moved: list[str] = []
    i = 0
    while i < len(args) and args[i] not in sub.choices:
        word = args[i]
        name = word.split("=", 1)[0]
        if word == "--" or not word.startswith("-"):
            return args
        if name in own:
            kept.append(word)
        else:
            moved.append(word)
            if "=" not in word and name in takes_value and i + 1 < len(args):
                i += 1
                moved.append(args[i])
        i += 1
    if i == len(args) or not moved:
        return args
    path = [args[i]]
    inner: argparse.ArgumentParser = sub.choices[args[i]]
    i += 1
    while (nested := _subcommands(inner)) is not None and i < len(args) and args[i] in nested.choices:
        path.append(args[i])
        inner = nested.choices[args[i]]
        i += 1
    return kept + path + moved + args[i:]


def _subcommands(parser: argparse.ArgumentParser) -> Any:
    """The parser's subcommands action (an `argparse._SubParsersAction`), or None."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _options_taking_a_value(sub: Any) -> set[str]:
    """Every option string, in any subcommand at any depth, that takes one value (`--state-dir DIR`)."""
    out: set[str] = set()
    for parser in sub.choices.values():
        for action in parser._actions:
            if action.option_strings and action.nargs != 0:
                out.update(action.option_strings)
        if (nested := _subcommands(parser)) is not None:
            out |= _options_taking_a_value(nested)
    return out


def integer(text: str) -> int:
    """An argparse type for an integer in ASCII digits, an optional leading minus: `int()` alone would also take
    `1_0`, ` 5` and other scripts' digits (as seeds are refused in `staminad.bench.seeds`)."""
    try:
        if _INTEGER.fullmatch(text):
            return int(text)
    except ValueError:  # more digits than int() converts
        pass
    raise argparse.ArgumentTypeError(f"{text!r} is not an integer (digits 0-9 only)")


__all__ = [
    "PROG_ENV",
    "OneLineParser",
    "close_match",
    "did_you_mean",
    "hint",
    "integer",
    "options_after_command",
    "program",
]
