"""`staminad` entry point: builds the argument parser and turns expected failures into one line.

Exit status 2 for usage errors (bad arguments, a bad sweep file or pack), 1 for runtime errors (no daemon,
a state directory that cannot be written, a corrupted store), 130 on an interrupt.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Sequence

from protocol.errors import ExpectedError, describe, leaves
from protocol.usage import OneLineParser, options_after_command, program
from staminad.commands import daemon, image, llm, oracle, report, run, sandboxes, scenario, view


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog=program(), description="StaminaBench: how long do coding agents stay correct?")
    parser.add_argument("--version", action="version", version=f"staminad {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    scenario.add_parsers(sub)
    oracle.add_parsers(sub)
    run.add_parsers(sub)
    image.add_parsers(sub)
    llm.add_parsers(sub)
    report.add_parsers(sub)
    daemon.add_parsers(sub)
    view.add_parsers(sub)
    sandboxes.add_parsers(sub)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("staminabench")
    except PackageNotFoundError:
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    given = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(options_after_command(parser, given))  # global options taken before the subcommand too
    try:
        return int(args.func(args))
    except BaseException as raised:  # sorted below; anything unexpected is re-raised whole
        found = leaves(raised)  # a task group's one failure is the failure
        exc = found[0] if len(found) == 1 else raised
        if isinstance(exc, ExpectedError):  # every failure a user can meet, whichever layer raised it
            print(f"{program()}: error: {describe(exc)}", file=sys.stderr)
            return exc.exit_status
        if isinstance(exc, OSError):
            print(f"{program()}: error: {describe(exc)}", file=sys.stderr)
            return 1
        if isinstance(exc, sqlite3.DatabaseError) and "disk" in str(exc) and ("full" in str(exc) or "I/O" in str(exc)):
            print(f"staminad: error: the state disk is full ({exc}): free space on it and run again", file=sys.stderr)
            return 1
        if isinstance(exc, sqlite3.DatabaseError) and "readonly" in str(exc):
            print(
                f"staminad: error: the state disk is read-only ({exc}): make it writable and run again", file=sys.stderr
            )
            return 1
        if isinstance(exc, sqlite3.DatabaseError):  # damaged, or sound and our fault: it says which
            print(f"{program()}: error: {_store_error(args, exc)}", file=sys.stderr)
            return 1
        if isinstance(exc, KeyboardInterrupt):
            return 130
        raise


def _store_error(args: argparse.Namespace, exc: sqlite3.DatabaseError) -> str:
    """The line for a store error no layer caught: whether the file is damaged, checked, never guessed."""
    from protocol.paths import resolve_state_dir
    from state.readonly import store_error

    try:
        db = resolve_state_dir(getattr(args, "state_dir", None)) / "staminad.db"
    except ExpectedError:
        db = None
    return store_error(db, exc)


if __name__ == "__main__":
    sys.exit(main())
