"""No module of the tree grows past MAX_LINES; the modules still over it are named here, and the list only shrinks.

STYLE.md keeps modules under ~400 lines. OVER_TODAY is exact: a module over the limit that is not on it fails
(split it, do not add it), and a module on it that is no longer over the limit (split, or gone) fails until it is
taken off, so the list cannot keep a stale entry that would let a module grow back.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("staminad", "protocol", "state", "tui")
MAX_LINES = 400

# The modules over MAX_LINES when this test was written, each waiting to be split. Take a module off once it is
# split; never add one.
OVER_TODAY = frozenset(
    {
        "staminad/daemon/service.py",
        "staminad/engine/scenario.py",
        "staminad/engine/sweep.py",
        "staminad/sandbox/local.py",
        "staminad/sandbox/sealed.py",
        "staminad/sandbox/volume.py",
        "state/store.py",
    }
)


def _line_counts() -> dict[str, int]:
    """Each module of PACKAGES by its path from the repository root, with its number of lines."""
    return {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def test_no_module_outside_the_list_is_over_the_limit() -> None:
    """Every module over MAX_LINES lines is one OVER_TODAY names: a new or grown module is split instead."""
    over = {path: n for path, n in _line_counts().items() if n > MAX_LINES and path not in OVER_TODAY}
    assert not over, f"modules over {MAX_LINES} lines (split them by responsibility): {over}"


def test_the_list_names_only_modules_still_over_the_limit() -> None:
    """Every module OVER_TODAY names still exists and is over MAX_LINES: a split module comes off the list."""
    counts = _line_counts()
    stale = sorted(path for path in OVER_TODAY if counts.get(path, 0) <= MAX_LINES)
    assert not stale, f"no longer over {MAX_LINES} lines (take them off OVER_TODAY): {stale}"
