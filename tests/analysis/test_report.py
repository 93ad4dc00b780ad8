"""A report from a real sweep of the reference agent, mutants and a fault injector: tables, figures, export."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.image as mpimg
import pyarrow.parquet as pq
import pytest

from staminad.analysis.data import load
from staminad.analysis.metrics import regressions, retry_curve, summary
from staminad.cli import main
from tests.helpers.sweeps import sweep, write_sweep

# The module's sweep (48 scenarios x 7 turns) is set up inside the first test's bound: on a busy 2-core machine
# (two CPU burners beside it) it takes longer than the default 300 s.
pytestmark = [pytest.mark.timeout(1200), pytest.mark.sweep]


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import anyio

    tmp = tmp_path_factory.mktemp("report")
    path = write_sweep(
        tmp,
        "rep",
        ["reference", "mutant:rounded-avg+fix", "mutant:no-cascade", "fault:crash:once"],
        seeds="0-5",
        turns=6,
        retries=2,
    )
    path.write_text(path.read_text().replace("retries = [2]", "retries = [0, 2]"))
    anyio.run(sweep, path, tmp / "state")
    return tmp / "state"


def test_retry_curve_from_one_run_matches_a_run_with_the_smaller_budget(state: Path) -> None:
    """Turns passed @R'=0 computed from the R=2 run's history equal the separate R=0 run's (deterministic agents)."""
    configs = {c.name: c for c in load(state / "staminad.db")}
    for agent in ("mutant:rounded-avg+fix", "mutant:no-cascade", "reference"):
        r2, r0 = configs[f"{agent} R=2 detailed"], configs[f"{agent} R=0 detailed"]
        assert retry_curve(r2)[0][1] == pytest.approx(summary(r0).mean_turns)
    fixer = configs["mutant:rounded-avg+fix R=2 detailed"]
    assert [round(m, 2) for _, m, _ in retry_curve(fixer)][-1] == 7.0


def test_infra_failures_are_censored_not_failures(state: Path) -> None:
    """A transient harness crash shows as an infra category, never lowers turns passed."""
    configs = {c.name: c for c in load(state / "staminad.db")}
    crash = configs["fault:crash:once R=0 detailed"]
    assert summary(crash).mean_turns == 7 and summary(crash).pass_rate == 1.0
    assert regressions(configs["mutant:no-cascade R=2 detailed"])[1] > 0


@pytest.mark.parametrize("fmt", ["md", "latex", "json", "csv"])
def test_report_command_writes_tables_and_figures(
    state: Path, tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`staminad report` writes the table in each format and every figure as a readable PNG and an SVG."""
    out = tmp_path / fmt
    assert (
        main(["report", "rep", "--state-dir", str(state), "--format", fmt, "--out", str(out), "--bootstrap", "200"])
        == 0
    )
    ext = {"md": "md", "latex": "tex", "json": "json", "csv": "csv"}[fmt]
    text = (out / f"report.{ext}").read_text()
    if fmt == "md":
        assert "**7.0 ± 0.0 (100%, n=6)**" in text and "cascade_deletion 6" in text and "harness_crash" in text
    elif fmt == "json":
        data = json.loads(text)
        assert data["table"]["cells"]["mutant:no-cascade"]["R=0 detailed"]["pass_rate"] == 0
        assert data["survival"]["mutant:no-cascade R=0 detailed"]["events"] == 6
    elif fmt == "latex":
        assert r"\textbf{" in text and r"\begin{tabular}" in text
    else:
        assert text.startswith("agent,setting,mean_turns")
    # loc_vs_turn is left out: the reference agent and its mutants keep one code size (see test_figures.py)
    for name in ("survival", "turns_vs_retry_budget", "failures_first", "failures_all"):
        image = mpimg.imread(out / f"{name}.png")
        assert image.shape[0] > 200 and image.std() > 0.01  # drawn, not blank
        assert (out / f"{name}.svg").read_text().startswith("<?xml")


def test_report_of_unknown_sweep_is_one_line(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Asking for a sweep the store does not have exits 2 naming what it has."""
    assert main(["report", "nope", "--state-dir", str(state)]) == 2
    err = capsys.readouterr().err
    assert "no sweep 'nope'" in err and "rep" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("count", ["99", "100001", "99999999999"])
def test_a_bootstrap_count_outside_its_bounds_is_one_line(
    tmp_path: Path, count: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--bootstrap` is refused below 100 and above 100000 (it ran unbounded), before the store is read."""
    assert main(["report", "--state-dir", str(tmp_path / "none"), "--bootstrap", count]) == 2
    err = capsys.readouterr().err
    assert err == f"staminad: error: --bootstrap {count} is outside 100..100000\n"


def test_export_csv_and_parquet(state: Path, tmp_path: Path) -> None:
    """`staminad export` writes every attempt; Parquet reads back with the same rows."""
    assert main(["export", "rep", "--state-dir", str(state), "--out", str(tmp_path / "a.csv")]) == 0
    lines = (tmp_path / "a.csv").read_text().splitlines()
    assert lines[0].startswith("sweep,configuration,agent")
    assert (
        main(["export", "rep", "--state-dir", str(state), "--format", "parquet", "--out", str(tmp_path / "a.parquet")])
        == 0
    )
    table = pq.read_table(tmp_path / "a.parquet")
    assert table.num_rows == len(lines) - 1
    assert set(table.column("outcome").to_pylist()) == {"pass", "fail", "infra"}
