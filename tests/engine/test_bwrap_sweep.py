"""A real sweep on the `bwrap` runtime: the reference agent, in its enclosures, passes every turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from staminad.sandbox.bwrap.box import BwrapFactory
from staminad.sandbox.ports import PortAllocator
from tests.helpers.sweeps import sweep, write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.sweep, pytest.mark.bwrap]


async def test_the_reference_agent_passes_every_turn_in_bwrap(tmp_path: Path) -> None:
    """Turn 0 and two change requests, each attempt's harness and server in enclosures: all pass, no infra."""
    path = write_sweep(tmp_path, "bwrap", ["reference"], turns=2, runtime="bwrap", patient=True)
    ports = PortAllocator(31560, 31569, lock_dir=tmp_path / "locks")
    res = await sweep(path, tmp_path / "state", factory=BwrapFactory(ports))
    ref = res["reference R=2 detailed"]
    assert ref.statuses == {"done": 1} and ref.mean_turns == 3 and ref.pass_rate == 1.0 and not ref.infra
    assert ports.held == set()
    sandboxes = list((tmp_path / "state").rglob("workspace"))
    assert sandboxes and all((s.parent / "layer" / "reference" / "agent.py").is_file() for s in sandboxes)
