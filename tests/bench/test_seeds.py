"""Seed lists: digits only, one bound for every seed, sizes checked before a range is expanded."""

from __future__ import annotations

import pytest

from staminad.bench.seeds import MAX_SEED, MAX_SEEDS, SeedError, seed, seed_list
from staminad.cli import main


def test_lists_ranges_and_duplicates_read_as_before() -> None:
    """`0,4,7-9` and overlapping parts give the sorted distinct seeds."""
    assert seed_list("0,4,7-9") == [0, 4, 7, 8, 9]
    assert seed_list(" 3 , 1-3 ") == [1, 2, 3]
    assert seed_list(f"0-{MAX_SEEDS - 1}")[-1] == MAX_SEEDS - 1


def test_a_huge_range_is_refused_before_it_is_expanded() -> None:
    """`0-100000000000` fails at once with the limit named (it used to fill memory, then print an empty reason)."""
    with pytest.raises(SeedError, match=f"more than {MAX_SEEDS} seeds"):
        seed_list(f"0-{MAX_SEED}")


def test_the_size_limit_is_a_running_total_across_parts() -> None:
    """Many parts each under the limit are still refused together."""
    half = MAX_SEEDS // 2
    with pytest.raises(SeedError, match=f"more than {MAX_SEEDS} seeds"):
        seed_list(f"0-{half},{10 * MAX_SEEDS}-{10 * MAX_SEEDS + half}")


@pytest.mark.parametrize(
    "text", ["9223372036854775808", "99999999999999999999999", f"{MAX_SEED + 1}", "5-" + "9" * 5000]
)
def test_a_seed_above_the_bound_is_refused(text: str) -> None:
    """Seeds past MAX_SEED (which SQLite could not even store from 2**63) are refused, not crashed on later."""
    with pytest.raises(SeedError, match=f"outside 0..{MAX_SEED}"):
        seed_list(text)
    assert seed(str(MAX_SEED)) == MAX_SEED


@pytest.mark.parametrize("text", ["1_0", "+1", "١٢", "-1", "1-", "0x10", ""])
def test_only_ascii_digits_are_seeds(text: str) -> None:
    """`int()` would take `1_0` as 10 and Arabic-Indic digits as numbers; a seed list does not."""
    with pytest.raises(SeedError):
        seed_list(text)


@pytest.mark.parametrize(
    "argv",
    [
        ["scenario", "generate", "--seeds", "0-100000000000", "-o", "p"],
        ["scenario", "generate", "--seeds", "1_0", "-o", "p"],
        ["scenario", "show", "p", "--seed", "99999999999999999999999"],
        ["scenario", "show", "p", "--seed", "1_0"],
        ["retry", "sweep", "cfg", "99999999999999999999999"],
    ],
)
def test_the_cli_refuses_bad_seeds_in_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """`scenario generate --seeds`, `scenario show --seed` and `retry SEED` share the bound: exit 2, one line."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("outside" in err or "seed" in err)
