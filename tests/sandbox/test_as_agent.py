"""The launcher's checks run as the agent's user: an agent that stops or kills one gets no answer that could be
taken for the platform's failure, only `interfered` (judged as the agent's doing), at once and bounded."""

from __future__ import annotations

import os
import signal
import time

from staminad.sandbox.inside import launcher

NOBODY = "65534:65534"  # another user than the test's (root here, as for the Docker tests)


def _kill_self(sig: signal.Signals, then: dict[str, object]) -> dict[str, object]:
    """What a check the agent interferes with does: signal its own process, then (if still alive) answer `then`."""
    os.kill(os.getpid(), sig)
    return then


def test_a_check_as_another_user_returns_its_result() -> None:
    """The check runs in a child as the given user and its JSON result comes back."""
    assert launcher._as_agent(NOBODY, lambda: {"uid": os.getuid()}) == {"uid": 65534}


def test_a_check_killed_by_the_agent_is_interfered_not_an_error() -> None:
    """A check the agent's processes kill (same user) gives `interfered`, not an exception."""
    found = launcher._as_agent(NOBODY, lambda: _kill_self(signal.SIGKILL, {}))
    assert "killed by the agent's processes" in found["interfered"]


def test_a_check_stopped_by_the_agent_is_interfered_within_a_moment() -> None:
    """A check the agent stops (SIGSTOP) is seen stopped and ended, long before its own 30 s bound."""
    start = time.monotonic()
    found = launcher._as_agent(NOBODY, lambda: _kill_self(signal.SIGSTOP, {"late": True}))
    assert "interfered" in found and "late" not in found
    assert time.monotonic() - start < launcher.AS_AGENT_TIMEOUT  # a bound, not a timing: it did not wait it out
