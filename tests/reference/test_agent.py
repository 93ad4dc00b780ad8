"""The reference agent: texts round-trip exactly, and the real program passes the suites it is given."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from staminad.bench.naming import NamingMode
from staminad.bench.readme import render_readme
from staminad.bench.sampler import SamplerName
from staminad.bench.scenario import ScenarioParams, generate
from staminad.bench.schema import State
from staminad.bench.texts import change_prompt, initial_prompt, render_spec
from staminad.reference.agent import Model
from staminad.reference.parse import parse_changes, parse_spec
from staminad.suite.feedback import render_feedback
from staminad.suite.generate import generate_suite
from staminad.suite.history import state_and_history
from staminad.suite.http11 import Http11Transport
from staminad.suite.runner import SuiteResult, run_suite
from tests.helpers import run_server_sh

AGENT = Path(__file__).parents[2] / "staminad" / "reference" / "agent.py"


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    naming=st.sampled_from(["themed", "programmatic"]),
    sampler=st.sampled_from(["uniform", "weighted"]),
    k=st.integers(1, 7),
)
def test_texts_round_trip_to_the_exact_state(seed: int, naming: NamingMode, sampler: SamplerName, k: int) -> None:
    """Parsing the spec and every change prompt rebuilds each state exactly: the texts are complete."""
    scenario = generate(
        seed,
        ScenarioParams(
            turns=25,
            naming=naming,
            sampler=sampler,
            changes_per_turn=k,
        ),
    )
    model = Model(parse_spec(render_spec(scenario.initial)))
    assert msgspec.convert(model.schema, State) == scenario.initial
    state = scenario.initial
    for batch in scenario.turns:
        text, state = change_prompt(batch, state)
        for change in parse_changes(text):
            model.apply(change, set())
        assert msgspec.convert(model.schema, State) == state


def _workspace(tmp: Path, seed: int) -> Path:
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "README.md").write_text(render_readme("python"))
    (ws / "initial_specification.md").write_text(render_spec(generate(seed, ScenarioParams(turns=0)).initial))
    return ws


def _agent(ws: Path, prompt: str, *extra: str) -> None:
    """Run the real agent program, isolated from site-packages (-I -S): it must be stdlib only."""
    bindir = ws.parent / "agent-bin"
    if not bindir.exists():
        bindir.mkdir()
        for name in ("agent.py", "parse.py"):
            shutil.copy(AGENT.with_name(name), bindir / name)
        shutil.copytree(AGENT.with_name("server"), bindir / "server", ignore=shutil.ignore_patterns("__pycache__"))
    (ws.parent / "prompt.md").write_text(prompt)
    subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            str(bindir / "agent.py"),
            "--workspace",
            str(ws),
            "--prompt-file",
            str(ws.parent / "prompt.md"),
            *extra,
        ],
        check=True,
        timeout=60,
    )


async def _suite_result(url: str, seed: int, turn: int, scenario_turns: int) -> SuiteResult:
    scenario = generate(seed, ScenarioParams(turns=scenario_turns))
    state, history = state_and_history(scenario, turn)
    async with Http11Transport.for_url(url) as transport:
        return await run_suite(generate_suite(state, seed, turn, history), transport)


@pytest.mark.anyio
async def test_real_agent_program_passes_turns_through_run_server_sh(tmp_path: Path) -> None:
    """The agent program writes run_server.sh and a server that passes turns 0-3 over real HTTP."""
    seed, turns = 12, 3
    scenario = generate(seed, ScenarioParams(turns=turns))
    ws = _workspace(tmp_path, seed)
    state = scenario.initial
    for turn in range(turns + 1):
        if turn == 0:
            prompt = initial_prompt("python")
        else:
            prompt, state = change_prompt(scenario.turns[turn - 1], state)
        await anyio.to_thread.run_sync(_agent, ws, prompt)
        with run_server_sh(ws) as url:
            result = await _suite_result(url, seed, turn, turns)
        assert result.passed, (turn, result.failures[:3])


@pytest.mark.anyio
async def test_mutant_repairs_itself_after_feedback(tmp_path: Path) -> None:
    """With --fix-on-feedback a mutant fails, reads the feedback prompt, and then passes."""
    ws = _workspace(tmp_path, 12)
    await anyio.to_thread.run_sync(_agent, ws, initial_prompt("python"), "--bug", "accept-null", "--fix-on-feedback")
    with run_server_sh(ws) as url:
        first = await _suite_result(url, 12, 0, 0)
    assert not first.passed
    await anyio.to_thread.run_sync(_agent, ws, render_feedback(first, "detailed"), "--fix-on-feedback")
    with run_server_sh(ws) as url:
        second = await _suite_result(url, 12, 0, 0)
    assert second.passed, second.failures[:3]


def test_agent_texts_reveal_no_tests_seed_or_pack() -> None:
    """Nothing an agent reads names the seed, the pack, or any test of its suite."""
    scenario = generate(31337, ScenarioParams(turns=5))
    texts = [render_readme("python"), render_spec(scenario.initial), initial_prompt("python")]
    state = scenario.initial
    for batch in scenario.turns:
        text, state = change_prompt(batch, state)
        texts.append(text)
    names = {
        t.name for turn in range(6) for t in generate_suite(*state_and_history(scenario, turn)[:1], 31337, turn).tests
    }
    joined = "\n".join(texts).lower()
    assert "31337" not in joined and "seed" not in joined and "pack" not in joined
    assert not [n for n in names if n in joined]
