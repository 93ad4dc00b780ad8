"""The test tiers: markers for what a test needs beyond Python, and the checks that keep the fast tier fast.

`./sb test --fast` deselects every marker in TIERS (its `-m` expression names them all; tests/test_markers.py
checks that, and that pyproject.toml declares exactly these). A test that needs one of them must carry it, and two
checks make a missing marker an error rather than a slow test in the fast tier: at collection, a test using a
fixture in FIXTURES without its marker stops the run (tests/conftest.py); while a test runs, each helper that
starts a sweep, a daemon or a Docker engine calls `needs()`, which fails a test lacking the marker. `slow` marks a
test that is heavy by itself: one without a marker that spends more CPU than the budget fails
(tests/helpers/cpubudget.py).
"""

from __future__ import annotations

import pytest

# Marker -> what it means; pyproject.toml's [tool.pytest.ini_options] markers say the same.
TIERS = {
    "docker": "needs a Docker engine",
    "e2e": "runs a real harness binary or its layer",
    "sweep": "runs a real sweep or daemon",
    "browser": "drives chromium",
    "tmux": "needs tmux",
    "bwrap": "needs bubblewrap able to make user and pid namespaces",
    "slow": "over the fast tier's CPU budget on its own (cpu_budget), needing nothing else (oracle gate, schemathesis)",
}

# Fixtures whose use needs a marker: a test asking for one of them carries it, wherever the test lives.
FIXTURES = {
    "sandbox_image": "docker",
    "second_engine": "docker",
    "chromium": "browser",
}

RUNNING: list[pytest.Item] = []  # the test running now (tests/conftest.py pushes and pops it)


def missing_markers(item: pytest.Item) -> list[str]:
    """The markers `item` lacks for the fixtures it uses (FIXTURES), each once, in the order of the table."""
    used = set(getattr(item, "fixturenames", ()))
    wanted = dict.fromkeys(marker for name, marker in FIXTURES.items() if name in used)
    return [marker for marker in wanted if item.get_closest_marker(marker) is None]


def needs(marker: str, what: str) -> None:
    """Fail the running test unless it carries `marker`: a helper doing `what` (a sweep, a daemon) calls this."""
    assert marker in TIERS, marker
    if RUNNING and RUNNING[-1].get_closest_marker(marker) is None:
        item = RUNNING[-1]
        pytest.fail(
            f"{item.nodeid} {what} but is not marked `{marker}` ({TIERS[marker]}): add "
            f"`pytestmark = pytest.mark.{marker}` to its module (or the mark to the test) so `--fast` leaves it out",
            pytrace=False,
        )
