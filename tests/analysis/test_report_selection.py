"""Reports over a store with two sweeps sharing a configuration name, a cancelled sweep, and unscored scenarios."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from staminad.cli import main
from state.store import Store
from tests.helpers.sweeps import sweep, write_sweep

pytestmark = pytest.mark.sweep


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("selection")
    store_dir = tmp / "state"
    short = write_sweep(tmp, "short", ["reference"], seeds="0-1", turns=2)
    long = write_sweep(tmp, "long", ["reference", "fault:crash"], seeds="0-1", turns=5)
    long.write_text(long.read_text().replace("infra_retries = 2", "infra_retries = 0"))
    dropped = write_sweep(tmp, "dropped", ["reference"], seeds="0", turns=1)

    async def fill() -> None:
        for path in (short, long, dropped):
            await sweep(path, store_dir)
        store = await Store.open(store_dir / "staminad.db")
        try:
            await store.set_sweep_status("dropped", "cancelled")
        finally:
            await store.close()

    anyio.run(fill)
    return store_dir


def _json(state: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:  # type: ignore[type-arg]
    assert main(["report", "--state-dir", str(state), "--format", "json", "--bootstrap", "100", *extra]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_configurations_of_one_name_in_two_sweeps_stay_apart(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`reference R=2 detailed` of each sweep has its own row, cell and survival entry, with its own figures."""
    data = _json(state, capsys)
    cells = data["table"]["cells"]
    assert cells["short/reference"]["R=2 detailed"]["mean"] == 3.0
    assert cells["long/reference"]["R=2 detailed"]["mean"] == 6.0
    assert data["survival"]["short/reference R=2 detailed"]["tau"] == 3.0
    assert data["survival"]["long/reference R=2 detailed"]["tau"] == 6.0
    assert sorted((c["sweep"], c["name"]) for c in data["configurations"]) == [
        ("long", "long/fault:crash R=2 detailed"),
        ("long", "long/reference R=2 detailed"),
        ("short", "short/reference R=2 detailed"),
    ]


def test_cancelled_sweeps_are_left_out_unless_asked(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Unnamed, a cancelled sweep is left out (one line says so); --include-cancelled or its name shows it."""
    assert not any(c["sweep"] == "dropped" for c in _json(state, capsys)["configurations"])
    assert main(["report", "--state-dir", str(state), "--bootstrap", "100"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["staminad: left out cancelled sweeps: dropped (--include-cancelled shows them)"]
    assert any(c["sweep"] == "dropped" for c in _json(state, capsys, "--include-cancelled")["configurations"])
    assert _json(state, capsys, "dropped")["configurations"][0]["sweep"] == "dropped"


def test_a_harness_crashing_before_any_test_is_scored_zero_as_in_the_paper(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A harness out of infra retries at turn 0 ends its scenario with 0 turns (paper), never a survivor."""
    data = _json(state, capsys, "long")
    crash = data["survival"]["fault:crash R=2 detailed"]
    assert (crash["scored"], crash["unscored"], crash["rmst"]) == (2, 0, 0.0)
    assert data["table"]["cells"]["fault:crash"]["R=2 detailed"]["n"] == 2
    assert data["table"]["cells"]["fault:crash"]["R=2 detailed"]["mean"] == 0.0
    assert data["scenarios"]["fault:crash R=2 detailed"] == {
        "scored": 2,
        "unscored": 0,
        "unfinished": 0,
        "never_run": 0,
        "total": 2,
    }
    assert data["scenarios"]["reference R=2 detailed"] == {
        "scored": 2,
        "unscored": 0,
        "unfinished": 0,
        "never_run": 0,
        "total": 2,
    }
    assert main(["report", "long", "--state-dir", str(state), "--bootstrap", "100"]) == 0
    text = capsys.readouterr().out
    assert "| reference R=2 detailed | n=2 | 6.00 |" in text
    assert "- fault:crash R=2 detailed: - ± - over 0 scenarios (paper: 0.0 over 2)" in text
