"""LaTeX tables against a golden file: floats with caption and label, booktabs; the main table bolds the best of
each row (the paper's rule, as the Markdown report), the others the best of each column, with ties."""

from __future__ import annotations

from pathlib import Path

from staminad.analysis import report
from staminad.analysis.latex import document, esc
from staminad.analysis.reportdata import Table
from tests.helpers.reports import cell, report_configs, report_of, row

GOLDEN = Path(__file__).parent / "golden" / "tables.tex"


REPORT = report_of(
    table=Table(
        rows=["agent_a", "b&c"],
        columns=["R=0 detailed", "R=0 minimal", "R=2 detailed"],
        cells={
            "agent_a": {
                "R=0 detailed": cell(3.04, 0.5, 0.25, False, True),
                "R=0 minimal": cell(1.0, 0.2, 0.0, False, False),
                "R=2 detailed": cell(4.0, 0.1, 0.5, True, True),
            },
            "b&c": {
                "R=0 detailed": cell(2.96, 0.4, 0.25, True, True),
                "R=0 minimal": cell(2.0, 0.3, 0.0, False, True),
            },
        },
    ),
    configurations=[
        row("agent_a", 0, "detailed", 3.04),
        row("agent_a", 0, "minimal", 1.0),
        row("agent_a", 2, "detailed", 4.0),
        row("b&c", 0, "detailed", 2.96),
        row("b&c", 0, "minimal", 2.0),
    ],
    retry_curves={
        "agent_a R=2 detailed": [(0, 3.0, 0.5), (1, 3.5, 0.4), (2, 4.0, 0.1)],
        "b&c R=0 detailed": [(0, 3.0, 0.4)],
    },
    failures_first={
        "agent_a R=0 detailed": {"validation": 2, "cascade_deletion": 1},
        "b&c R=0 detailed": {"validation": 2, "harness_crash": 0},
    },
)


def test_tables_match_the_golden_file() -> None:
    """The rendered tables equal the reviewed golden file (update it only on purpose)."""
    assert document(REPORT) == GOLDEN.read_text()


def test_ties_are_all_bold_and_every_table_is_a_labelled_booktabs_float() -> None:
    """Ties (after rounding) are all bold, and every table is a captioned, labelled booktabs float."""
    text = document(REPORT)
    main = text.split(r"\label{tab:main}")[1].split(r"\end{table}")[0]
    assert r"\textbf{4.0 $\pm$ 0.1 (50\%)}" in main and r"\textbf{3.0 $\pm$ 0.4 (25\%)}" in main
    assert r"3.0 $\pm$ 0.5 (25\%)$^\dagger$" in main and r"\textbf{3.0 $\pm$ 0.5 (25\%)}" not in main
    assert r"\textbf{3.0 $\pm$ 0.5}" in text and r"\textbf{3.0 $\pm$ 0.4}" in text  # retry budget R'=0 tie
    for label in ("main", "retry-budget", "feedback", "failures"):
        block = text.split(rf"\label{{tab:{label}}}")[0].rsplit(r"\begin{table}", 1)[1]
        assert r"\caption{" in block
    assert text.count(r"\toprule") == text.count(r"\midrule") == text.count(r"\bottomrule") == 4


def test_names_are_escaped() -> None:
    """LaTeX's special characters in names are escaped."""
    assert esc("a_b&c%$#{}~^\\") == r"a\_b\&c\%\$\#\{\}\textasciitilde{}\textasciicircum{}\textbackslash{}"
    assert r"b\&c" in document(REPORT) and "agent\\_a" in document(REPORT)


def test_a_configuration_with_nothing_scored_is_a_dash_in_every_table() -> None:
    """A configuration whose only scenario never ran shows `--` (n/a in the main table) instead of failing."""
    text = report.latex(report.build(report_configs(), n_boot=50))
    rows = [line for line in text.splitlines() if line.startswith("gamma")]
    assert rows == [
        r"gamma @ m-small & n/a & -- \\",
        r"gamma R=2 detailed @m-small & -- & -- & -- \\",
        r"gamma R=2 & -- & -- \\",
        r"gamma R=2 detailed @m-small & 0 & 0 & 0 & 0 & 0 & 0 \\",
    ]
