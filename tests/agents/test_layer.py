"""Each adapter's agent layer: the files its sandbox carries exist, include what it runs, and nothing of the grader."""

from __future__ import annotations

from pathlib import Path

import pytest

import staminad
from staminad.agents.base import adapter_for, list_adapters
from staminad.sandbox.base import SandboxPaths

PACKAGE = Path(staminad.__file__).parent
PATHS = SandboxPaths("/workspace", "/stamina", "/harness")


@pytest.mark.parametrize("name", [a.name for a in list_adapters()])
def test_the_layer_holds_what_the_agent_runs(name: str) -> None:
    """Every file exists, the script the adapter launches is in its layer, and so are the wrapper and launcher."""
    adapter = adapter_for(name)
    layer = adapter.layer()
    assert all((PACKAGE / rel).is_file() for rel in layer)
    assert {"sandbox/inside/wrapper.sh", "sandbox/inside/server.sh"} <= set(layer)
    argv = adapter.argv(PATHS, "/stamina/prompts/t0000-a01-i00.md")
    scripts = [a.removeprefix("/harness/") for a in argv or [] if a.startswith("/harness/")]
    assert set(scripts) <= set(layer)


@pytest.mark.parametrize("name", ["manual", *(a.name for a in list_adapters() if a.harness)])
def test_real_harnesses_carry_nothing_of_the_grader(name: str) -> None:
    """A real harness's (or a person's) sandbox gets no reference, suite or bench file."""
    assert not [rel for rel in adapter_for(name).layer() if rel.split("/")[0] in ("reference", "suite", "bench")]
