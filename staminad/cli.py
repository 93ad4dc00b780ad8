"""`staminad` entry point: builds the argument parser and turns expected failures into one line.

Exit status 2 for usage errors (bad arguments, a bad sweep file or pack), 1 for runtime errors (no daemon,
a state directory that cannot be written, a corrupted store), 130 on an interrupt.

Each subcommand's module (`staminad.commands.*`) is imported only when its command is named: the parser
starts with one placeholder per command (its name and help line, from COMMANDS), and `LazyCommands` puts the
module's own parsers in their place once the command line names it. `staminad --version` and `--help` import
none of the engine, the sandbox runtimes or the analysis stack (tests/test_cli_start.py checks it;
benchmarks/bench_cli.py measures it).
"""

from __future__ import annotations

import argparse
import importlib
import sqlite3
import sys
from collections.abc import Sequence
from typing import Any

from protocol.errors import ExpectedError, describe, leaves
from protocol.usage import OneLineParser, options_after_command, program

# Every top-level command: (its module under staminad.commands, its help line), in the order --help lists them.
# A module's `add_parsers` adds each of its commands with the same help (tests/test_cli_start.py checks both).
COMMANDS: dict[str, tuple[str, str]] = {
    "scenario": ("scenario", "generate and inspect scenario packs"),
    "validate": ("oracle", "reference agent must pass every turn; every mutant must be caught"),
    "reference": ("oracle", "the reference server"),
    "suite": ("oracle", "generated test suites"),
    "run": ("run", "run a sweep in process (resumes if run again)"),
    "done": ("run", "finish a manual attempt: write its completion marker"),
    "image": ("image", "sandbox images"),
    "agents": ("image", "agents and harnesses"),
    "llm": ("llm", "the models a sweep runs on"),
    "report": ("report", "tables and figures for one or more sweeps"),
    "export": ("report", "every attempt as CSV or Parquet, for notebooks"),
    "start": ("daemon", "run the daemon in the foreground (systemd-friendly)"),
    "submit": ("clients", "submit a sweep file"),
    "status": ("clients", "sweeps and their progress"),
    "cancel": ("clients", "cancel a sweep"),
    "pause": ("clients", "pause a sweep after running attempts"),
    "resume": ("clients", "resume a paused sweep"),
    "stop": ("clients", "stop the daemon"),
    "retry": ("clients", "give a scenario that used up its infra retries another round"),
    "logs": ("clients", "stream events"),
    "view": ("view", "browse sweeps, scenarios and attempts in a web page (read-only)"),
    "sandboxes": ("sandboxes", "list the project's sandboxes on each engine; --prune removes the orphans"),
}


class LazyCommands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """The subcommands, each a placeholder until `load` (or parsing) replaces it with its module's parsers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.loaded: set[str] = set()  # modules whose parsers replaced their placeholders

    def load(self, command: str) -> None:
        """Import `command`'s module and let it add its parsers in place of its commands' placeholders."""
        module = COMMANDS[command][0]
        if module in self.loaded:
            return
        self.loaded.add(module)
        for name in [name for name, (mod, _) in COMMANDS.items() if mod == module]:
            del self._name_parser_map[name]
        listed = len(self._choices_actions)
        importlib.import_module(f"staminad.commands.{module}").add_parsers(self)
        del self._choices_actions[listed:]  # --help lists the placeholders' lines (the same texts)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, *rest: Any) -> None:
        if values and values[0] in COMMANDS:
            self.load(values[0])
        super().__call__(parser, namespace, values, *rest)


def build_parser(*named: str) -> argparse.ArgumentParser:
    """The parser, with the modules of the commands among `named` (words of a command line) loaded; the
    others load when a parse reaches them."""
    parser = OneLineParser(prog=program(), description="StaminaBench: how long do coding agents stay correct?")
    parser.add_argument("--version", action=_Version, help="show program's version number and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser, action=LazyCommands)
    assert isinstance(sub, LazyCommands)
    for name, (_, helptext) in COMMANDS.items():
        sub.add_parser(name, help=helptext)
    for word in dict.fromkeys(named):
        if word in COMMANDS:  # options before the command (`--state-dir D run`) are moved by what it takes
            sub.load(word)
    return parser


class _Version(argparse.Action):
    """`--version`: the installed version, looked up (importlib.metadata) only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"staminad {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("staminabench")
    except PackageNotFoundError:
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    parser = build_parser(*given)
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
