"""Golden files of rendered texts, so wording changes are deliberate (regenerate with UPDATE_GOLDEN=1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from staminad.bench.readme import render_readme
from staminad.bench.scenario import ScenarioParams, generate
from staminad.bench.texts import change_prompt, initial_prompt, render_spec

GOLDEN = Path(__file__).parent.parent / "golden"


def _texts() -> dict[str, str]:
    out = {
        "README.python.md": render_readme("python"),
        "README.rust.md": render_readme("rust"),
        "prompt-0.javascript.md": initial_prompt("javascript"),
    }
    for naming, seed in (("themed", 0), ("programmatic", 1)):
        scenario = generate(seed, ScenarioParams(turns=3, naming=naming))  # type: ignore[arg-type]
        out[f"{naming}-{seed}.spec.md"] = render_spec(scenario.initial)
        state = scenario.initial
        for t, batch in enumerate(scenario.turns, 1):
            out[f"{naming}-{seed}.prompt-{t}.md"], state = change_prompt(batch, state)
    return out


@pytest.mark.parametrize("name", sorted(_texts()))
def test_rendered_text_matches_golden(name: str) -> None:
    """Each rendered text equals its checked-in golden copy."""
    text = _texts()[name]
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.read_text() == text
