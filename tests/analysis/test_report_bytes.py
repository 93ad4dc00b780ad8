"""The report's files, byte for byte: JSON, Markdown, CSV and LaTeX of a fixed selection against golden files.

The golden files were written before the report became typed (Structs instead of dicts), so this pins that what
`staminad report` writes did not change with it. Regenerate them only for a change meant to alter the output.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from staminad.analysis import cost, report
from staminad.analysis.data import ConfigData
from staminad.analysis.reportdata import Report
from staminad.cli import main
from tests.helpers.reports import report_configs, write_store

GOLDEN = Path(__file__).parent / "golden"


def _data(configs: list[ConfigData]) -> Report:
    """What `staminad report` renders: the built report with a store's cost study that found no usage."""
    return report.with_cost(report.build(configs, n_boot=200), cost.CostStudy(configurations=None, text=cost.NO_USAGE))


def test_json_markdown_and_csv_match_the_golden_files() -> None:
    """`--format json`, `md` and `csv` write exactly the golden bytes for the fixed selection."""
    data = _data(report_configs())
    assert report.to_json(data).encode() == (GOLDEN / "report.json").read_bytes()
    assert report.markdown(data).encode() == (GOLDEN / "report.md").read_bytes()
    assert report.csv_table(data).encode() == (GOLDEN / "report.csv").read_bytes()


def test_latex_matches_the_golden_file() -> None:
    """`--format latex` writes exactly the golden bytes (the selection without its never-run configuration)."""
    assert report.latex(_data(report_configs()[:-1])).encode() == (GOLDEN / "report.tex").read_bytes()


def test_the_report_command_writes_the_golden_json_with_a_cost_study(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`staminad report --format json` over a store of the selection with gateway usage prints the golden bytes."""
    anyio.run(write_store, tmp_path / "staminad.db")
    capsys.readouterr()
    assert main(["report", "fixed", "--state-dir", str(tmp_path), "--format", "json", "--bootstrap", "200"]) == 0
    assert capsys.readouterr().out.encode() == (GOLDEN / "report_metered.json").read_bytes()
