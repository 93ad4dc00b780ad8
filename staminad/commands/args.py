"""Argument types shared by several commands; each raises a one-line error on bad input.

`UsageError` (exit 2) and `CommandError` (exit 1) are the commands' `ExpectedError`s (`protocol.errors`).
"""

from __future__ import annotations

import argparse

from protocol.errors import ExpectedError, UsageError
from staminad.bench import seeds
from state.lock import check_store, lock_state_dir


class CommandError(ExpectedError):
    """A command that could not do its work (no daemon, an unwritable state dir): one line, exit status 1."""


def seed_list(text: str) -> list[int]:
    """An argparse type for a seed list (see `staminad.bench.seeds`), its error argparse's one line."""
    try:
        return seeds.seed_list(text)
    except seeds.SeedError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def bounded_int(lo: int, hi: int):  # type: ignore[no-untyped-def]
    """An argparse type accepting integers in [lo, hi]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} is outside {lo}..{hi}")
        return value

    return parse


__all__ = ["CommandError", "UsageError", "bounded_int", "check_store", "lock_state_dir", "seed_list"]
