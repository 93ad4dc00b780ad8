"""Paper-ready figures from a real sweep: every format, editable text, captions, skips that say why, cost figures."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import matplotlib.pyplot as plt
import msgspec
import pytest
from PIL import Image

from staminad.analysis import cost, figures, plotting
from staminad.analysis.reportdata import CostScenario
from staminad.cli import main
from state import Store
from tests.helpers.reports import curve, report_of, row
from tests.helpers.sweeps import sweep, write_sweep

pytestmark = pytest.mark.sweep

NAMES = (
    "survival",
    "turns_vs_retry_budget",
    "failures_first",
    "failures_all",
    "cost_vs_turns",
    "turns_within_cost_budget",
)


async def _meter(db: Path) -> None:
    """Record model calls per attempt as the LLM gateway does: a dollar-cent per turn, more on retries."""
    async with await Store.open(db) as store:
        async with store.db.execute("SELECT a.id, a.scenario_id, a.turn, a.attempt FROM attempts a") as cur:
            rows = await cur.fetchall()
        for attempt_id, scenario_id, turn, attempt in rows:
            await store.llm_call(
                scenario_id,
                attempt_id,
                turn,
                "openai",
                "m",
                (1000 * attempt, 200, 0),
                0.01 * attempt,
                200,
                0.5,
                0.0,
                False,
            )


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("figures")
    path = write_sweep(
        tmp,
        "fig",
        ["reference", "mutant:rounded-avg+fix", "mutant:500-on-wrong-type", "fault:crash:once"],
        seeds="0-2",
        turns=3,
        retries=1,
    )
    anyio.run(sweep, path, tmp / "state")
    return tmp / "state"


@pytest.fixture(scope="module")
def metered(state: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same store after a gateway recorded usage (a copy, so the unmetered one stays as it was)."""
    import shutil
    import sqlite3

    copy = tmp_path_factory.mktemp("metered") / "state"
    copy.mkdir()
    src = sqlite3.connect(state / "staminad.db")
    dst = sqlite3.connect(copy / "staminad.db")
    src.backup(dst)
    src.close()
    dst.close()
    shutil.copytree(state / "sandboxes", copy / "sandboxes")
    anyio.run(_meter, copy / "staminad.db")
    return copy


@pytest.fixture(scope="module")
def report_dir(metered: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out")
    assert main(["report", "fig", "--state-dir", str(metered), "--out", str(out), "--bootstrap", "200"]) == 0
    return out


@pytest.mark.parametrize("name", NAMES)
def test_each_figure_is_written_as_pdf_svg_and_300_dpi_png(report_dir: Path, name: str) -> None:
    """Every figure exists in all three formats; the PNG is 300 dpi and not blank."""
    png = Image.open(report_dir / f"{name}.png")
    assert png.info["dpi"] == pytest.approx((300, 300), abs=0.5) and png.width > 1200
    assert len(set(png.convert("L").tobytes())) > 10  # drawn, not one flat colour
    assert (report_dir / f"{name}.pdf").read_bytes().startswith(b"%PDF")
    assert (report_dir / f"{name}.svg").read_text().lstrip().startswith("<?xml")


def test_the_report_checks_exactly_the_files_draw_writes(metered: Path, tmp_path: Path) -> None:
    """`file_names` (what `report` checks before writing) is every file `draw` writes, no more, no less."""
    from staminad.analysis import report
    from staminad.analysis.data import load

    data = report.with_cost(
        report.build(load(metered / "staminad.db", ["fig"]), n_boot=100), cost.study(metered / "staminad.db", ["fig"])
    )
    drawn = figures.draw(data, tmp_path)
    assert (
        sorted(figures.file_names(data))
        == sorted(p.name for p in drawn.paths())
        == sorted(p.name for p in tmp_path.iterdir())
    )


def test_text_stays_editable_in_svg_and_pdf(report_dir: Path) -> None:
    """SVG text is real <text> (not glyph outlines) and the PDF embeds TrueType fonts (Type 42), not Type 3."""
    svg = (report_dir / "survival.svg").read_text()
    assert "<text" in svg and "turns survived" in svg and "reference R=1 detailed" in svg
    assert 'id="DejaVuSans-' not in svg  # glyphs are not drawn as paths
    pdf = (report_dir / "survival.pdf").read_bytes()
    assert b"/FontFile2" in pdf and b"/Type3" not in pdf


def test_captions_say_n_turns_r_and_the_error_bars_beside_the_image_not_in_it(
    report_dir: Path, metered: Path, tmp_path: Path
) -> None:
    """Captions (K, turns, R, what the bars are) are in report.md and report.tex, never in the images."""
    scope = "K = 3 scored scenarios per configuration, turns = 3 (turn 0 + 3 changes), R = 1"
    md = (report_dir / "report.md").read_text()
    assert (
        main(
            [
                "report",
                "fig",
                "--state-dir",
                str(metered),
                "--out",
                str(tmp_path),
                "--bootstrap",
                "200",
                "--format",
                "latex",
            ]
        )
        == 0
    )
    tex = (tmp_path / "report.tex").read_text()
    for name, bars in (
        ("survival", "95% CI"),
        ("turns_vs_retry_budget", "±1 SE"),
        ("turns_within_cost_budget", "±1 SE"),
    ):
        svg = (report_dir / f"{name}.svg").read_text()
        assert scope not in svg and bars not in svg, name
        caption = next(line for line in md.splitlines() if line.startswith("*") and f"[PDF]({name}.pdf)" in line)
        assert scope in caption and bars in caption, name
        float_ = tex.split(rf"\includegraphics[width=\linewidth]{{{name}.pdf}}")[1].split(r"\end{figure}")[0]
        assert r"\caption{" in float_ and scope in float_ and rf"\label{{fig:{name.replace('_', '-')}}}" in float_


def test_twelve_configurations_have_twelve_distinct_legend_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twelve configurations get twelve distinct legend entries in every figure; `style` keeps 32 apart."""
    names = [f"agent{i} R=1 detailed" for i in range(12)]
    report = report_of(
        configurations=[row(f"agent{i}", 1, "detailed", 2.0, scenarios=3, n_turns=3) for i in range(12)],
        retry_curves={n: [(0, 1.0 + i / 10, 0.1), (1, 2.0 + i / 10, 0.1)] for i, n in enumerate(names)},
        survival={n: curve([1.0, 2.0], [0.7, 0.3]) for n in names},
    )
    drawn: list[Any] = []
    close = plt.close

    def keep_and_close(fig: Any) -> None:
        drawn.append(fig)
        close(fig)

    monkeypatch.setattr(plt, "close", keep_and_close)
    figures.retry_budget(report, tmp_path)
    figures.survival(report, tmp_path)
    (retry, labels), (surv, _) = (fig.axes[0].get_legend_handles_labels() for fig in drawn)
    assert all(fig.axes[0].get_legend() is not None for fig in drawn)
    lines = [h[0] for h in retry]  # an error bar's entry is drawn as its data line, with its marker
    looks = [(h.get_color(), h.get_marker(), h.get_linestyle()) for h in lines]
    assert labels == names and len(set(looks)) == 12
    curves = [(h.get_color(), h.get_linestyle()) for h in surv]
    assert len(curves) == 12 and len(set(curves)) == 12
    assert len({(s["color"], s["linestyle"]) for s in map(plotting.style, range(32))}) == 32
    assert len({tuple(plotting.style(i).values()) for i in range(64)}) == 64


def test_turn_axes_have_integer_ticks(report_dir: Path) -> None:
    """The survival figure's turn axis is labelled with whole turns only."""
    svg = (report_dir / "survival.svg").read_text()
    xticks = re.findall(r'<g id="xtick_\d+">.*?<text [^>]*>([^<]*)</text>', svg, re.S)
    assert xticks == [str(t) for t in range(len(xticks))] and len(xticks) >= 4


def test_censoring_marks_and_bands_are_drawn() -> None:
    """The Kaplan-Meier band is inside [0, 1], holds the curve, and is the point 0 where S reaches 0."""
    s = msgspec.structs.replace(curve([1.0, 2.0, 3.0], [0.75, 0.5, 0.0]), km_at_risk=[4, 3, 2], km_events=[1, 1, 2])
    lo, hi = figures.greenwood_band(s)
    assert all(0 <= a <= v <= b <= 1 for a, v, b in zip(lo, s.km_survival, hi, strict=True))
    assert lo[-1] == hi[-1] == 0.0 and hi[0] - lo[0] > 0.2


def test_report_md_embeds_each_figure_with_its_caption(report_dir: Path) -> None:
    """report.md shows each PNG and links the vector files, and lists the figures left out with why."""
    text = (report_dir / "report.md").read_text()
    for name in NAMES:
        assert f"![{name}]({name}.png)" in text and f"[PDF]({name}.pdf)" in text and f"[SVG]({name}.svg)" in text
    assert "turns_vs_feedback left out: every configuration uses the same feedback level." in text
    assert "spent through the gateway" in text


def test_loc_figure_is_skipped_with_a_reason_when_it_says_nothing() -> None:
    """No LoC counts, or the same count on every turn, skip the figure with the reason; varying counts draw it."""
    assert "no lines-of-code counts" in (figures.loc_information(report_of(loc_by_turn={"a": []})) or "")
    flat = report_of(loc_by_turn={"a": [(0, 357.0, 0.0, 3), (1, 357.0, 0.0, 3)]})
    assert "same size" in (figures.loc_information(flat) or "")
    varying = report_of(loc_by_turn={"a": [(0, 300.0, 0.0, 3), (1, 357.0, 1.0, 3)]})
    assert figures.loc_information(varying) is None


def test_without_usage_the_cost_figures_are_skipped_with_a_line(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unmetered store draws no cost figures and prints why, once."""
    assert main(["report", "fig", "--state-dir", str(state), "--out", str(tmp_path), "--bootstrap", "200"]) == 0
    out = capsys.readouterr().out
    assert out.count("cost_vs_turns and turns_within_cost_budget left out: no model usage recorded") == 1
    assert not (tmp_path / "cost_vs_turns.png").exists()


def test_turns_within_budget_counts_turns_until_the_running_cost_exceeds_it() -> None:
    """A turn counts when the cost of it and every turn before it fits the budget."""
    sc = CostScenario(
        seed=0, turns_passed=3, status="failed", cost=7.5, cost_by_turn=[(0, 1.0), (1, 2.0), (2, 0.5), (3, 4.0)]
    )
    assert [cost.turns_within(sc, b) for b in (0.5, 1.0, 2.9, 3.0, 3.5, 100)] == [0, 1, 1, 2, 3, 3]


def test_report_html_writes_a_self_contained_static_site(metered: Path, tmp_path: Path) -> None:
    """`report --html` writes a self-contained static site: linked pages, embedded figures, no script."""
    assert (
        main(["report", "fig", "--state-dir", str(metered), "--out", str(tmp_path), "--bootstrap", "200", "--html"])
        == 0
    )
    site = tmp_path / "site"
    pages = {p.name: p.read_text() for p in site.glob("*.html")}
    assert (
        len([n for n in pages if n.startswith("scenario-")]) == 12
        and len([n for n in pages if n.startswith("compare-")]) == 3
    )
    assert 'src="data:image/png;base64,' in pages["index.html"] and "<script" not in "".join(pages.values())
    for text in pages.values():
        for href in re.findall(r'href="([^"#]+)"', text):
            assert (site / href).exists(), href
    assert "request" in "".join(v for k, v in pages.items() if "500-on-wrong-type" in k)


def test_report_html_needs_out(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--html` without `--out` is one line, exit 2."""
    assert main(["report", "fig", "--state-dir", str(state), "--html"]) == 2
    assert "--html needs --out" in capsys.readouterr().err


def test_export_carries_timings_usage_and_leaves_what_does_not_apply_empty(metered: Path, tmp_path: Path) -> None:
    """Each exported attempt has its timestamps, durations, tokens and cost; infra rows have no LoC or tests."""
    import csv

    import pyarrow.parquet as pq

    from staminad.analysis.export import COLUMNS

    assert main(["export", "fig", "--state-dir", str(metered), "--out", str(tmp_path / "a.csv")]) == 0
    with open(tmp_path / "a.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == list(COLUMNS) and all(COLUMNS.values())
    tested = [r for r in rows if r["outcome"] in ("pass", "fail")]
    infra = [r for r in rows if r["outcome"] == "infra"]
    assert tested and infra
    for r in tested:
        assert float(r["finished_at"]) >= float(r["launched_at"]) > 0
        assert float(r["suite_seconds"]) > 0 and float(r["server_start_seconds"]) > 0 and r["passed_tests"]
        assert float(r["cost"]) == pytest.approx(0.01 * int(r["attempt"])) and r["input_tokens"] == str(
            1000 * int(r["attempt"])
        )
    for r in infra:
        assert r["loc"] == r["failed_tests"] == r["passed_tests"] == r["suite_seconds"] == ""
        assert r["infra_kind"] == "harness_crash" and r["harness_exit"] not in ("", "0")
    assert (
        main(
            ["export", "fig", "--state-dir", str(metered), "--format", "parquet", "--out", str(tmp_path / "a.parquet")]
        )
        == 0
    )
    table = pq.read_table(tmp_path / "a.parquet")
    assert table.num_rows == len(rows) and table.column("cost").null_count == 0
