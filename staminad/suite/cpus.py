"""How many suite workers a pool starts, and the CPUs they may run on (this process's affinity)."""

from __future__ import annotations

import os


def usable_set() -> set[int]:
    """The CPUs this process may run on (its affinity)."""
    try:
        return os.sched_getaffinity(0)
    except AttributeError:  # not Linux
        return set(range(os.cpu_count() or 1))


def usable_cpus() -> int:
    """How many CPUs this process may run on (its affinity)."""
    return len(usable_set())


MIN_WORKERS = 2  # so that a scenario's next suite is made in one worker while its suite runs in the other


def default_size() -> int:
    """The CPUs this process may run on, less one for the event loop; at least `MIN_WORKERS`: a suite made in the
    process where another runs takes the GIL from its requests, a second process only shares the cores."""
    return max(MIN_WORKERS, usable_cpus() - 1)
