"""Every view shows money that is not exact as such: an estimated call makes a sum `~$ est.`, an unpriced one says
`unpriced` (never $0), and an attempt that compacted its context says so: `status`, the attempt list the TUI
shows, the viewer, `report` and `export` read the same store."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

import anyio

from protocol import ScenarioInfo, SweepInfo
from staminad.analysis import cost, export
from staminad.analysis.data import load
from staminad.commands.clients import info_lines
from staminad.daemon.metrics_store import read_figures
from staminad.daemon.views import scenario_info, sweep_info
from staminad.viewer.model import scenario_page, sweep_page
from state.store import Store, Verdict

PRICED, UNPRICED = "mini-swe-agent m1 R=2 detailed", "mini-swe-agent m2 R=2 detailed"


async def _fill(db: Path) -> None:
    async with await Store.open(db) as store:
        await store.ensure_sweep("money", "money", "fp", "{}")
        await store.set_sweep_turns("money", 1, 1)
        await store.set_sweep_status("money", "finished")
        for name, model in ((PRICED, "m1"), (UNPRICED, "m2")):
            config = await store.ensure_configuration("money", name, "mini-swe-agent", 2, "detailed", model)
            row = await store.ensure_scenario(config, 0)
            attempt = await store.begin_attempt(row.id, 0, 1, 0, "initial", "p")
            if model == "m1":  # one exact call, one estimated from its size, one compaction (exact)
                for estimated, compaction in ((False, False), (True, False), (False, True)):
                    flags = (False, estimated, compaction)  # (unpriced, abandoned, compaction); abandoned: estimated
                    await store.llm_call(row.id, attempt.id, 0, "chat", model, (400, 100, 0), 0.5, 200, 1.0, 0.0, False,
                                         estimated, flags)  # fmt: skip
            else:  # no price: counted, cost unknown
                await store.llm_call(row.id, attempt.id, 0, "chat", model, (400, 100, 0), 0.0, 200, 1.0, 0.0, False,
                                     False, (True, False, False))  # fmt: skip
            await store.tested(attempt.id, Verdict(outcome="pass"))
            await store.set_scenario_status(row.id, "done", turns_passed=1)


async def _infos(db: Path) -> tuple[SweepInfo, ScenarioInfo]:
    async with await Store.open(db) as store:
        return await sweep_info(store, "money"), await scenario_info(store, "money", PRICED, 0)


def test_estimated_unpriced_and_compacted_show_in_every_view(tmp_path: Path) -> None:
    """status, the scenario's attempts (TUI), the viewer, report and export all mark the same calls."""
    db = tmp_path / "staminad.db"
    anyio.run(_fill, db)
    info, scenario = anyio.run(_infos, db)

    # `staminad status` (and the TUI overview, from this reply)
    priced, unpriced = info.configurations
    assert (priced.cost_text, unpriced.cost_text) == ("~$1.50 est.", "unpriced")
    lines = info_lines(info)
    assert "~$1.50 est." in lines[1] and "unpriced" in lines[2] and "$0.00" not in lines[2]
    (attempt,) = scenario.attempts  # the TUI's scenario screen
    assert (attempt.cost_text, attempt.compactions, attempt.estimated_calls) == ("~$1.50 est.", 1, 1)

    # the viewer
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        page = sweep_page(conn, "money")
        detail = scenario_page(conn, "money", PRICED, 0)
    finally:
        conn.close()
    assert [c.cost for c in page["configs"]] == ["~$1.50 est.", "unpriced"]
    (usage,) = [a["usage"] for a in detail["attempts"]]
    assert usage.compactions == 1 and usage.money.text(4) == "~$1.5000 est." and detail["cost"] == "~$1.50 est."

    # `report`'s cost line
    text = cost.study(db).text
    assert "~$1.50 est." in text and f"{UNPRICED} unpriced" in text and "1 calls of a model without a price" in text

    # `export`
    out = tmp_path / "x.csv"
    export.write(load(db), out, "csv", db)
    with open(out) as fh:
        rows = {r["configuration"]: r for r in csv.DictReader(fh)}
    assert (rows[PRICED]["estimated_calls"], rows[PRICED]["compactions"], rows[PRICED]["unpriced_calls"]) == (
        "1",
        "1",
        "0",
    )
    assert rows[UNPRICED]["unpriced_calls"] == "1" and rows[UNPRICED]["abandoned_calls"] == "0"

    # the metrics label each configuration with its own model (a sweep of several models has no one `[llm] model`)
    figures = read_figures(db)
    assert (figures.model("money", PRICED), figures.model("money", UNPRICED)) == ("m1", "m2")
