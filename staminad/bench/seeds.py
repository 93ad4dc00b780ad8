"""Seed lists as people write them (`0-19`, `3`, `0,4,7-9`), parsed once for the sweep file and the CLI.

Seeds are ASCII digits only (`int()` alone would take `1_0` as 10, or other scripts' digits), each within
`0..MAX_SEED` (the store keeps them as SQLite integers), and a list's size is checked before a range is expanded,
so a typo such as `0-100000000000` is refused at once instead of filling memory.
"""

from __future__ import annotations

import re

from protocol.errors import UsageError

MAX_SEEDS = 100_000
MAX_SEED = 1_000_000_000

_SEED = re.compile(r"[0-9]+")
_RANGE = re.compile(r"([0-9]+)-([0-9]+)")


class SeedError(UsageError, ValueError):
    """A seed list that cannot be read, with the reason in one line."""


def seed(text: str) -> int:
    """One seed: ASCII digits, within 0..MAX_SEED."""
    if not _SEED.fullmatch(text):
        raise SeedError(f"{text!r} is not a seed (digits 0-9 only)")
    # Compare lengths first: int() refuses (and is slow on) digit strings thousands long.
    if len(text.lstrip("0")) > len(str(MAX_SEED)) or int(text) > MAX_SEED:
        raise SeedError(f"seed {text} is outside 0..{MAX_SEED}")
    return int(text)


def seed_list(text: str) -> list[int]:
    """`0-19`, `3`, or `0,4,7-9` -> a sorted list of distinct seeds, at most MAX_SEEDS of them."""
    ranges: list[tuple[int, int]] = []
    total = 0
    for part in text.split(","):
        part = part.strip()
        if (m := _RANGE.fullmatch(part)) is not None:
            lo, hi = seed(m[1]), seed(m[2])
            if lo > hi:
                raise SeedError(f"seed range {part!r} is empty (start above end)")
        elif _SEED.fullmatch(part):
            lo = hi = seed(part)
        else:
            raise SeedError(f"{text!r} is not a seed list such as 0-19 or 1,4,7")
        total += hi - lo + 1  # counted before anything is expanded
        if total > MAX_SEEDS:
            raise SeedError(f"{text!r} names more than {MAX_SEEDS} seeds, the most one list may hold")
        ranges.append((lo, hi))
    return sorted({s for lo, hi in ranges for s in range(lo, hi + 1)})


__all__ = ["MAX_SEED", "MAX_SEEDS", "SeedError", "seed", "seed_list"]
