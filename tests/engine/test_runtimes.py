"""The runtime registry: one entry per runtime, from which the sweep check, the CLI choices and `auto` derive."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from staminad.engine.config import RunSettings, SweepError, parse_sweep
from staminad.engine.runtime import RuntimeUnavailable, choose_runtime
from staminad.sandbox import runtimes
from staminad.sandbox.local import LocalFactory
from staminad.sandbox.ports import PortAllocator
from staminad.sandbox.runtimes import RUNTIME_CHOICES, RUNTIMES, Runtime

pytestmark = pytest.mark.anyio

SWEEP = 'name = "x"\n[matrix]\nagents = ["reference"]\n[run]\nruntime = "{runtime}"\nworkspace = "{workspace}"\n'


def _sweep(runtime_name: str, workspace: str = "mount") -> None:
    parse_sweep(SWEEP.format(runtime=runtime_name, workspace=workspace).encode(), Path("s.toml"))


def test_every_registered_runtime_and_auto_is_a_valid_sweep_runtime() -> None:
    """The choices are `auto` and the registry's names, nothing written elsewhere."""
    assert ("auto", *RUNTIMES) == RUNTIME_CHOICES
    for name in RUNTIME_CHOICES:
        _sweep(name)


def test_an_unknown_runtime_is_one_line_with_a_near_miss() -> None:
    """`dokcer` is refused naming the choices and the one meant."""
    said = r"run.runtime must be one of auto, docker, bwrap, local; did you mean 'docker'\?"
    with pytest.raises(SweepError, match=said):
        _sweep("dokcer")


def test_volumes_need_a_runtime_that_keeps_them() -> None:
    """A volume workspace on a runtime without volumes is refused naming the runtimes that have them."""
    with pytest.raises(SweepError, match=r'run.workspace = "volume" needs a runtime that keeps volumes \(docker'):
        _sweep("local", "volume")
    _sweep("docker", "volume")


def test_the_clis_runtime_choices_are_the_registrys() -> None:
    """`--runtime` of `run` and `start` offers exactly the registry's choices."""
    for command in ("run", "start"):
        out = subprocess.run(
            [sys.executable, "-m", "staminad.cli", command, "--runtime", "nope", "x.toml"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert out.returncode == 2, out.stderr
        assert "choose from " + ", ".join(repr(c) for c in RUNTIME_CHOICES) in out.stderr.replace("\n", " ")


async def test_a_new_runtime_is_one_entry_and_auto_says_why_it_passed_it_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An isolating runtime registered first that cannot run here is passed over by `auto`, with its reason."""

    async def absent(images: Any) -> str | None:
        return f"no cluster to run {len(images)} images"

    def never(placement: runtimes.Placement) -> runtimes.Made:
        raise AssertionError("an unavailable runtime is never made")

    pods = Runtime(name="pods", summary="pods", probe=absent, make=never, isolates=True, remote=False)
    local = RUNTIMES["local"]
    monkeypatch.setattr(runtimes, "RUNTIMES", {"pods": pods, "local": local})
    factory, said = await choose_runtime("auto", RunSettings(), PortAllocator())
    assert isinstance(factory, LocalFactory)
    assert said == "local (pods unavailable: no cluster to run 1 images)"
    with pytest.raises(RuntimeUnavailable, match="runtime pods unavailable: no cluster"):
        await choose_runtime("pods", RunSettings(), PortAllocator())


@pytest.mark.bwrap
async def test_auto_takes_bwrap_when_docker_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Docker unavailable, `auto` takes the other isolating runtime, bwrap, before local, and says why."""
    from staminad.sandbox.bwrap.box import BwrapFactory

    async def absent(images: Any) -> str | None:
        return "no Docker engine (test)"

    docker = dataclasses.replace(RUNTIMES["docker"], probe=absent)
    monkeypatch.setattr(runtimes, "RUNTIMES", {**RUNTIMES, "docker": docker})
    factory, said = await choose_runtime("auto", RunSettings(), PortAllocator())
    assert isinstance(factory, BwrapFactory)
    assert said == "bwrap (docker unavailable: no Docker engine (test))"
