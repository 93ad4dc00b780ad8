"""How `./sb test` runs the tests in parallel: pytest-xdist with `--dist loadgroup`, one file per unit of work,
except the groups here, whose files run on one worker one after another.

By file, a module's fixtures are made once and its tests run in order; ports are machine-wide locks and every
test has its own tmp dir, so files share the machine. A session fixture is made once per worker, so the files
that share a costly one form a group, as do the files that cannot run beside each other. Without pytest-xdist
(a plain `pytest` in a venv lacking it) nothing here applies: `xdist_group` is xdist's marker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# Every test marked `docker` is in this group. They share one Docker engine, the sandbox image and the harness
# layers (built under machine-wide locks, but a wait on one blocks a worker), the second engine (a dockerd and
# an image load per worker otherwise), and the fault tests bound their waits for an engine nothing else loads.
DOCKER = "docker"

# Group -> the files in it (paths from the repository root), for a reason each.
GROUPS: dict[str, tuple[str, ...]] = {
    # tests/viewer/conftest.py's session-scoped `store` runs two real sweeps; made once, not once per worker.
    "viewer-store": ("tests/viewer/test_pages.py", "tests/viewer/test_browser.py"),
}

_GROUP_OF = {path: name for name, paths in GROUPS.items() for path in paths}


def group_of(item: pytest.Item, root: Path) -> str:
    """The xdist group `item` runs in: DOCKER, its file's group of GROUPS, or else its file."""
    if item.get_closest_marker("docker") is not None:
        return DOCKER
    path = item.path.relative_to(root).as_posix()
    return _GROUP_OF.get(path, path)


def assign_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every item with its `xdist_group` (group_of) where pytest-xdist is loaded; otherwise do nothing."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group_of(item, config.rootpath)))
