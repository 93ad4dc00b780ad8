"""Seed lists as people write them (`0-19`, `3`, `0,4,7-9`), parsed once for the sweep file and the CLI."""

from __future__ import annotations

from protocol.errors import UsageError

MAX_SEEDS = 100_000


class SeedError(UsageError, ValueError):
    """A seed list that cannot be read, with the reason in one line."""


def seed_list(text: str) -> list[int]:
    """`0-19`, `3`, or `0,4,7-9` -> a sorted list of distinct non-negative seeds."""
    seeds: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part:
                lo_s, hi_s = part.split("-", 1)
                lo, hi = int(lo_s), int(hi_s)
                if lo > hi:
                    raise SeedError(f"seed range {part!r} is empty (start above end)")
                seeds.update(range(lo, hi + 1))
            else:
                seeds.add(int(part))
        except SeedError:
            raise
        except ValueError:
            raise SeedError(f"{text!r} is not a seed list such as 0-19 or 1,4,7") from None
    if any(s < 0 for s in seeds):
        raise SeedError("seeds must not be negative")
    if len(seeds) > MAX_SEEDS:
        raise SeedError(f"at most {MAX_SEEDS} seeds")
    return sorted(seeds)


__all__ = ["MAX_SEEDS", "SeedError", "seed_list"]
