"""The fast tier's CPU budget: a test without a tier marker (tiers.TIERS) that spends more CPU than the budget fails.

`./sb test --fast` is run on every save, so it must stay short (README: its figure); a test that is heavy by itself
belongs in `slow`, and nothing else would notice one that grew. Measured per test in the process that runs it
(an xdist worker, or the one pytest process): the CPU time of its call phase, this process's threads plus the
children it reaped meanwhile (a test's subprocesses, its suite workers). Setup and teardown are left out: a
session fixture's cost would land on whichever test came first.

The budget is `cpu_budget` in pyproject.toml's pytest options, or `--cpu-budget SECONDS` (0 turns it off). CPU
time, unlike wall time, hardly moves with a busy machine, so the budget sits well above the heaviest unmarked
test: a test that fails it is several times heavier than the fast tier's usual test, not unlucky.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Generator

import pytest

from tests.helpers import tiers

DEFAULT = 8.0  # seconds of CPU for one test's call when pyproject.toml names none


def cpu_seconds() -> float:
    """CPU time of this process (every thread) and of its reaped children, in seconds."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def add_options(parser: pytest.Parser) -> None:
    """`cpu_budget` (ini) and `--cpu-budget` (command line, which wins)."""
    parser.addini("cpu_budget", "CPU seconds one unmarked test's call may spend (0: no budget)", default=str(DEFAULT))
    parser.addoption(
        "--cpu-budget",
        type=float,
        default=None,
        help="CPU seconds one test without a tier marker may spend in its call (0: no budget); see cpu_budget",
    )


def budget(config: pytest.Config) -> float:
    """The budget in seconds this run enforces (0: none)."""
    given = config.getoption("--cpu-budget")
    return float(given if given is not None else config.getini("cpu_budget"))


def exempt(item: pytest.Item) -> bool:
    """A test carrying a tier marker is outside the fast tier: its cost is its marker's business."""
    return any(item.get_closest_marker(marker) is not None for marker in tiers.TIERS)


def over_budget(spent: float, limit: float) -> bool:
    """Whether `spent` CPU seconds break `limit` (a limit of 0 or less is none)."""
    return limit > 0 and spent > limit


def message(nodeid: str, spent: float, limit: float) -> str:
    """What a test over the budget is told: its figure, the budget and the two ways out."""
    return (
        f"{nodeid} spent {spent:.1f} s of CPU, over the fast tier's budget of {limit:g} s: mark it "
        "`@pytest.mark.slow` (the fast tier leaves it out) or make it lighter (cpu_budget in pyproject.toml)"
    )


def check(item: pytest.Item) -> Generator[None, object, object]:
    """A `pytest_runtest_call` wrapper's body (`return (yield from check(item))`): the call fails when it spent
    over the budget."""
    limit = budget(item.config)
    if limit <= 0 or exempt(item):
        return (yield)
    start, wall = cpu_seconds(), time.monotonic()
    result = yield
    spent = cpu_seconds() - start
    item.user_properties.append(("cpu_seconds", round(spent, 3)))
    item.user_properties.append(("call_seconds", round(time.monotonic() - wall, 3)))
    if over_budget(spent, limit):
        pytest.fail(message(item.nodeid, spent, limit), pytrace=False)
    return result
