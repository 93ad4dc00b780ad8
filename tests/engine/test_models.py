"""Models as a matrix axis: the sweep file's `[[llm.models]]`, the expanded grid, the protocol refusal, and a
sweep of three agents x two models whose report pairs results across models."""

from __future__ import annotations

import sqlite3
import textwrap
from pathlib import Path

import pytest

from staminad.analysis.data import load
from staminad.analysis.report import build, markdown
from staminad.engine.config import SweepError, configurations, load_sweep, parse_sweep
from staminad.engine.models import sweep_models
from tests.helpers.sweeps import sweep, write_sweep

MODELS = """
[llm]
[[llm.models]]
name = "qwen-local"
endpoint = "http://127.0.0.1:8000/v1"
protocols = ["openai-chat", "anthropic-messages"]
api_key_env = "QWEN_KEY"
price = { input = 0.1, output = 0.4 }
context_window = 131072
concurrency = 8
[[llm.models]]
name = "glm-local"
endpoint = "http://127.0.0.1:8001/v1"
protocols = ["openai-chat", "openai-responses"]
"""


def _parse(agents: list[str], llm: str = MODELS) -> tuple[object, str]:
    text = f'name = "g"\n[matrix]\nagents = {agents!r}\nretries = [0, 2]\n' + textwrap.dedent(llm)
    return parse_sweep(text.encode(), Path("g.toml"))


def test_each_model_is_read_with_its_endpoint_protocols_key_price_window_and_limit() -> None:
    """Every field of a model reaches the sweep; the matrix is agent x model x R, each named by its model."""
    sw, _ = parse_sweep(
        (f'name = "g"\n[matrix]\nagents = ["reference", "mini-swe-agent"]\nretries = [0, 2]\n{MODELS}').encode(),
        Path("g.toml"),
    )
    qwen, glm = sweep_models(sw.llm)
    assert (qwen.endpoint, qwen.protocols, qwen.api_key_env) == (
        "http://127.0.0.1:8000/v1",
        ["openai-chat", "anthropic-messages"],
        "QWEN_KEY",
    )
    assert qwen.price is not None and (qwen.price.input, qwen.price.output) == (0.1, 0.4)
    assert (qwen.context_window, qwen.concurrency, glm.concurrency, glm.api_key_env) == (131072, 8, None, "")
    names = [c.name for c in configurations(sw)]
    assert len(names) == 8 and "mini-swe-agent glm-local R=2 detailed" in names
    assert {c.model for c in configurations(sw)} == {"qwen-local", "glm-local"}


def test_the_single_model_form_keeps_its_names_and_fingerprint(tmp_path: Path) -> None:
    """A one-model `[llm]` keeps its configuration names and its fingerprint from before models were an axis."""
    # The fingerprint below is what staminad computed for this file before models were an axis.
    path = tmp_path / "old.toml"
    path.write_text(
        'name = "old"\n[matrix]\nagents = ["reference"]\n[llm]\nendpoint = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    )
    sw, fp = load_sweep(path)
    assert fp == "f87f190bc902c5a4"
    assert [(c.name, c.model) for c in configurations(sw)] == [("reference R=2 detailed", "m")]
    assert sweep_models(sw.llm)[0].protocols == ["openai-chat", "openai-responses", "anthropic-messages"]


def test_a_harness_whose_protocol_a_model_does_not_serve_is_refused_in_one_line() -> None:
    """A harness whose protocol a model does not serve is refused in one line naming both, before anything runs."""
    with pytest.raises(SweepError) as claude:
        _parse(["reference", "claude-code"])
    message = str(claude.value)
    assert "\n" not in message
    assert "claude-code speaks anthropic-messages, which model glm-local" in message
    with pytest.raises(SweepError, match="codex speaks openai-responses, which model qwen-local"):
        _parse(["codex"])
    _parse(["mini-swe-agent", "aider"])  # chat harnesses run on both


@pytest.mark.parametrize(
    ("llm", "expected"),
    [
        (MODELS.replace("[llm]\n", '[llm]\nmodel = "x"\n'), "not both"),
        (MODELS.replace('name = "glm-local"', 'name = "qwen-local"'), "listed twice"),
        (MODELS.replace('"http://127.0.0.1:8001/v1"', '"127.0.0.1:8001"'), "endpoint must be an http(s) URL"),
        (MODELS.replace("concurrency = 8", "concurrency = 0"), "concurrency must be 1..10000"),
        (MODELS.replace('"openai-chat", "openai-responses"', '"openai-chat", "openai-response"'), "did you mean"),
        (MODELS.replace("concurrency = 8", "concurency = 8"), "did you mean 'concurrency'"),
        ("[llm]\n", "llm.endpoint must be an http(s) URL"),
    ],
    ids=["both-forms", "twice", "endpoint", "concurrency", "protocol-typo", "field-typo", "empty"],
)
def test_a_bad_model_table_is_refused_with_the_reason(llm: str, expected: str) -> None:
    """Each mistake in `[[llm.models]]` gets a line saying what to fix."""
    with pytest.raises(SweepError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        _parse(["reference"], llm)


@pytest.mark.anyio
@pytest.mark.sweep
async def test_three_agents_on_two_models_pair_in_the_reports_grid(tmp_path: Path) -> None:
    """Three agents on two models store their model, pair in the report's grid and plan per-model figures."""
    extra = MODELS.replace('protocols = ["openai-chat", "anthropic-messages"]\n', "")
    path = write_sweep(
        tmp_path,
        "grid",
        ["reference", "mutant:no-cascade", "mutant:accept-null"],
        seeds="0-3",
        turns=3,
        retries=0,
        extra=extra,
    )
    state = tmp_path / "st"
    summaries = await sweep(path, state)
    assert len(summaries) == 6
    assert summaries["mutant:accept-null glm-local R=0 detailed"].model == "glm-local"  # what `status` sends
    with sqlite3.connect(state / "staminad.db") as db:
        rows = db.execute("SELECT agent, model, COUNT(s.id) FROM configurations c JOIN scenarios s "
                          "ON s.config_id = c.id GROUP BY c.id ORDER BY c.id").fetchall()  # fmt: skip
    assert rows == [(a, m, 4) for a in ("reference", "mutant:no-cascade", "mutant:accept-null")
                    for m in ("qwen-local", "glm-local")]  # fmt: skip
    report = build(load(state / "staminad.db"), n_boot=200)
    grid = report.grid
    assert grid is not None
    assert grid.models == ["qwen-local", "glm-local"] and grid.settings == ["R=0 detailed"]
    cells = grid.cells["R=0 detailed"]
    assert set(cells) == {"reference", "mutant:no-cascade", "mutant:accept-null"}
    for row in cells.values():
        assert set(row) == {"qwen-local", "glm-local"}
        assert all(v.n == 4 and v.paired == 4 for v in row.values())  # paired over the same four seeds
        # A deterministic agent scores the same on either model: the comparison across models finds nothing.
        assert row["qwen-local"].mean == row["glm-local"].mean
        assert [v.best for v in row.values()].count(True) == 1
        assert all(v.p_vs_best == 1.0 for v in row.values())
    assert cells["reference"]["qwen-local"].mean == 4.0  # turns 0..3 all passed
    assert "reference @ glm-local" in report.table.rows
    text = markdown(report)
    assert "## Harness x model" in text and "| harness | qwen-local | glm-local |" in text
    assert "| reference | **4.0 ± 0.0 (n=4)** | 4.0 ± 0.0 (n=4), p=1 |" in text
    from staminad.analysis.figures import file_names

    assert {"grid_mean_turns.svg", "survival_qwen-local.svg", "survival_glm-local.svg"} <= set(file_names(report))
    from staminad.viewer.model import sweep_page
    from staminad.viewer.render import environment
    from state.queries import connect_readonly

    conn = connect_readonly(state / "staminad.db")
    try:
        rows = sweep_page(conn, "grid")["configs"]
    finally:
        conn.close()
    html = environment().get_template("_headline.html").render(rows=rows)
    assert "<th>model</th>" in html and "<td>glm-local</td>" in html  # the viewer's model column
