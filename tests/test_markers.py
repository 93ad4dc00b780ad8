"""The test tiers hold: markers declared once, `./sb test --fast` leaves out every one, and a test that needs one
without carrying it fails (at collection for a fixture, when it runs for a helper that starts a sweep or a daemon)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers import cpubudget, daemon, dockerd, e2e, inprocess, sweeps, tiers

ROOT = Path(__file__).resolve().parents[1]


def test_pyproject_declares_exactly_the_tiers() -> None:
    """pyproject.toml's markers are tiers.TIERS, each with the same meaning."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    declared = dict(line.split(": ", 1) for line in config["markers"])
    assert declared == tiers.TIERS
    assert "--strict-markers" in config["addopts"].split()


def test_the_fast_tier_leaves_out_every_tier() -> None:
    """`./sb test --fast` deselects each marker of TIERS and nothing else."""
    found = re.search(r'^FAST_TIER="not \(([a-z0-9 ]+)\)"$', (ROOT / "sb").read_text(), re.M)
    assert found is not None
    assert found.group(1).split(" or ") == list(tiers.TIERS)


def test_a_fixture_that_needs_a_marker_is_reported_for_a_test_without_it() -> None:
    """A test using the sandbox image or a second engine must be marked docker; marked, it passes the check."""

    class Item:
        def __init__(self, fixturenames: list[str], marks: set[str]) -> None:
            self.fixturenames, self.marks = fixturenames, marks

        def get_closest_marker(self, name: str) -> pytest.Mark | None:
            return getattr(pytest.mark, name).mark if name in self.marks else None

    def missing(fixtures: list[str], marks: set[str]) -> list[str]:
        return tiers.missing_markers(Item(fixtures, marks))  # type: ignore[arg-type]

    assert missing(["tmp_path", "second_engine", "sandbox_image", "chromium"], set()) == ["docker", "browser"]
    assert missing(["sandbox_image"], {"docker", "sweep"}) == []
    assert missing(["tmp_path", "anyio_backend"], set()) == []


def _sweep(tmp: Path) -> Any:
    return anyio.run(sweeps.sweep, tmp / "none.toml", tmp)


def _running_daemon(tmp: Path) -> Any:
    async def serve() -> None:
        async with inprocess.running_daemon(tmp):
            pass

    return anyio.run(serve)


HELPERS: dict[str, tuple[Callable[[Path], Any], str]] = {
    "an in-process sweep": (_sweep, "sweep"),
    "an in-process daemon": (_running_daemon, "sweep"),
    "a daemon process": (lambda tmp: daemon.start(tmp / "st"), "sweep"),
    "a harness run": (lambda tmp: e2e.run_sweep(tmp / "none.toml", tmp), "e2e"),
    "a second Docker engine": (lambda tmp: dockerd.SecondEngine(base=tmp).start(), "docker"),
}


@pytest.mark.parametrize("helper", list(HELPERS))
def test_a_helper_starting_something_slow_fails_a_test_without_its_marker(tmp_path: Path, helper: str) -> None:
    """Each helper that starts a sweep, a daemon, a harness or an engine fails an unmarked test before it starts."""
    call, marker = HELPERS[helper]
    with pytest.raises(pytest.fail.Exception, match=rf"is not marked `{marker}`"):
        call(tmp_path)


def test_needs_lets_a_marked_test_through(request: pytest.FixtureRequest) -> None:
    """With the marker on the running test, `needs` says nothing; without it, it names the test and the marker."""
    with pytest.raises(pytest.fail.Exception, match=r"test_needs_lets_a_marked_test_through(@\S+)? runs a sweep but"):
        tiers.needs("sweep", "runs a sweep")
    request.applymarker(pytest.mark.sweep)
    tiers.needs("sweep", "runs a sweep")


def test_a_test_over_the_cpu_budget_is_failed_unless_a_tier_marker_exempts_it() -> None:
    """Over the budget an unmarked test fails with its figure and the way out; a `slow` one is exempt; 0 is none."""

    class Item:
        def __init__(self, marks: set[str]) -> None:
            self.marks = marks

        def get_closest_marker(self, name: str) -> object | None:
            return name if name in self.marks else None

    assert cpubudget.over_budget(4.5, 4.0) and not cpubudget.over_budget(3.9, 4.0)
    assert not cpubudget.over_budget(100.0, 0)
    assert cpubudget.exempt(Item({"slow"})) and cpubudget.exempt(Item({"docker"}))  # type: ignore[arg-type]
    assert not cpubudget.exempt(Item({"anyio"}))  # type: ignore[arg-type]
    said = cpubudget.message("tests/t.py::test_x", 6.25, 4.0)
    assert "6.2 s of CPU" in said and "budget of 4 s" in said and "pytest.mark.slow" in said


def test_the_cpu_budget_is_pyproject_s_and_measures_this_process_and_its_children() -> None:
    """The run enforces pyproject.toml's cpu_budget, and the clock counts CPU spent in a reaped child process."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert float(config["cpu_budget"]) > 0
    before = cpubudget.cpu_seconds()
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)
    assert cpubudget.cpu_seconds() - before > 0.05
