"""Argument types shared by several commands; each raises a one-line error on bad input.

`UsageError` (exit 2) and `CommandError` (exit 1) are the commands' `ExpectedError`s (`protocol.errors`). The
types import what they check against when they parse a value, so building a command's parser stays light.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from protocol.errors import ExpectedError, UsageError
from protocol.usage import integer
from staminad.bench import seeds
from state.lock import check_store, lock_state_dir

if TYPE_CHECKING:
    from staminad.sandbox.docker.enginespec import EngineSpec


class CommandError(ExpectedError):
    """A command that could not do its work (no daemon, an unwritable state dir): one line, exit status 1."""


def seed_list(text: str) -> list[int]:
    """An argparse type for a seed list (see `staminad.bench.seeds`), its error argparse's one line."""
    try:
        return seeds.seed_list(text)
    except seeds.SeedError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def one_seed(text: str) -> int:
    """An argparse type for one seed (see `staminad.bench.seeds`): the same digits and bound as a seed list."""
    try:
        return seeds.seed(text)
    except seeds.SeedError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def bounded_int(lo: int, hi: int):  # type: ignore[no-untyped-def]
    """An argparse type accepting integers in [lo, hi], in ASCII digits (see `protocol.usage.integer`)."""

    def parse(text: str) -> int:
        value = integer(text)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} is outside {lo}..{hi}")
        return value

    return parse


def ip_address(text: str) -> str:
    """An argparse type for an address to listen on: an IP address (a name could resolve to another host's)."""
    import ipaddress

    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an IP address: give one of this host's addresses (or 0.0.0.0 for all)"
        ) from None


def seconds(text: str) -> float:
    """An argparse type for a timeout: the bound a sweep file's `run.*_timeout` has (never NaN or negative)."""
    from staminad.engine.config import MAX_SECONDS, positive_seconds  # parsing a value, not building the parser

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not positive_seconds(value):
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds up to {MAX_SECONDS}")
    return value


def engine(text: str) -> EngineSpec:
    """An argparse type for `--engine URL[,slots=N][,tls=DIR][,gateway=IP]` (see `sandbox.docker.enginespec`)."""
    from staminad.sandbox.docker.enginespec import parse_flag  # parsing a value, not building the parser

    try:
        return parse_flag(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_engine_flag(parser: argparse.ArgumentParser, help: str) -> None:
    """Add the repeatable `--engine URL[,slots=N][,tls=DIR][,gateway=IP]` flag (into `engines`) with this help."""
    parser.add_argument(
        "--engine",
        dest="engines",
        action="append",
        type=engine,
        default=[],
        metavar="URL[,slots=N][,tls=DIR][,gateway=IP]",
        help=help,
    )


def check_engines(engines: list[EngineSpec]) -> list[EngineSpec]:
    """`--engine`s as given, refused with one line when one URL is named twice."""
    urls = [e.url for e in engines]
    twice = sorted({u for u in urls if urls.count(u) > 1})
    if twice:
        raise UsageError(f"--engine {twice[0]} is given twice; name each engine once")
    return engines


__all__ = [
    "CommandError",
    "UsageError",
    "add_engine_flag",
    "bounded_int",
    "check_engines",
    "check_store",
    "engine",
    "integer",
    "lock_state_dir",
    "one_seed",
    "seconds",
    "seed_list",
]
