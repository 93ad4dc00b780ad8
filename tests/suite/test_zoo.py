"""Every zoo server (the reference logic behind each HTTP stack agents pick) passes the suite of several turns."""

from __future__ import annotations

import msgspec
import pytest

from benchmarks import zoo
from staminad.bench.scenario import ScenarioParams, generate
from staminad.suite.generate import generate_suite
from staminad.suite.history import state_and_history
from staminad.suite.http11 import Http11Transport
from staminad.suite.runner import run_suite

pytestmark = pytest.mark.anyio
SEED = 3
SCENARIO = generate(SEED, ScenarioParams(turns=6))


@pytest.mark.slow  # 2-4 s of CPU per stack: a real server and a whole suite
@pytest.mark.parametrize("stack", zoo.STACKS)
async def test_zoo_server_passes_the_suite(stack: str) -> None:
    """The zoo server of this stack passes the whole suite at turns 0, 3 and 6, over one transport per turn."""
    if zoo.missing(stack):
        pytest.skip(f"optional dependency not installed: {', '.join(zoo.missing(stack))} (pip install -e .[zoo])")
    for turn in (0, 3, 6):
        state, history = state_and_history(SCENARIO, turn)
        suite = generate_suite(state, SEED, turn, history)
        with zoo.running(stack, msgspec.to_builtins(state)) as url:
            async with Http11Transport.for_url(url, timeout=5.0) as transport:
                result = await run_suite(suite, transport)
        assert result.passed, (stack, turn, [f.message for f in result.failures[:3]])
        assert not result.server_died and result.requests > len(suite.tests)
