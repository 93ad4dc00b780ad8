"""The `[llm]` settings the gateway runs under, and how a scenario ends when its model's context ran out."""

from __future__ import annotations

from pathlib import Path

import pytest

from staminad.engine.config import SweepError, SweepFile, load_sweep
from staminad.engine.outcome import HARNESS_KINDS
from staminad.engine.position import position
from staminad.engine.score import standing
from tests.engine.test_faults import _row

HEAD = 'name = "g"\n[matrix]\nagents = ["mini-swe-agent"]\n[llm]\nendpoint = "http://127.0.0.1:9/v1"\nmodel = "m"\n'


def _load(tmp_path: Path, extra: str) -> tuple[SweepFile, str]:
    path = tmp_path / "s.toml"
    path.write_text(HEAD + extra)
    return load_sweep(path)


def test_a_capped_sweep_whose_model_has_no_price_is_refused_in_one_line(tmp_path: Path) -> None:
    """A cost cap over a model the pricing table lacks would be blind: refused, naming the model and the fix."""
    with pytest.raises(SweepError, match=r"cost cap is set but 'm' has no price: add it to \[llm.pricing\]") as err:
        _load(tmp_path, "scenario_cost_cap = 5.0\n")
    assert "\n" not in str(err.value)
    _load(tmp_path, "scenario_cost_cap = 5.0\n[llm.pricing.m]\ninput = 1.0\noutput = 2.0\n")
    _load(tmp_path, "")  # no cap: no price needed (its tokens are still counted)


def test_timeout_and_concurrency_are_settings_left_out_of_the_fingerprint(tmp_path: Path) -> None:
    """first_byte_timeout and concurrency parse, are checked, and do not change which rows a sweep resumes."""
    sweep, plain = _load(tmp_path, "")
    tuned, print2 = _load(tmp_path, "first_byte_timeout = 900\nconcurrency = 3\n")
    assert tuned.llm is not None and sweep.llm is not None
    assert (tuned.llm.first_byte_timeout, tuned.llm.concurrency) == (900, 3) and plain == print2
    assert (sweep.llm.first_byte_timeout, sweep.llm.concurrency) == (300.0, 8)
    for bad in ("concurrency = 0\n", "first_byte_timeout = 0\n"):
        with pytest.raises(SweepError, match="llm"):
            _load(tmp_path, bad)


def test_context_exhaustion_ends_the_scenario_at_once_and_is_scored() -> None:
    """No infra retry resends the same context: the scenario ends infra_failed on that turn, scored (harness side)."""
    rows = [_row(0, 1, 0, "pass"), _row(1, 1, 0, "infra", "context_exhausted")]
    pos = position(rows, n_turns=5, retries=2, infra_retries=10)
    assert pos.final == "infra_failed" and pos.turns_passed == 1 and "context_exhausted on turn 1" in pos.reason
    assert (
        "context_exhausted" in HARNESS_KINDS and standing("infra_failed", "context_exhausted", tested=True) == "scored"
    )
    crash = position([_row(0, 1, 0, "infra", "harness_crash")], n_turns=5, retries=2, infra_retries=10)
    assert crash.final is None and crash.infra_try == 1


def test_a_context_window_and_compaction_share_reach_the_model_and_are_checked(tmp_path: Path) -> None:
    """`context_window` and `compact_at` reach the model, are range-checked, and leave old fingerprints unchanged."""
    from staminad.engine.models import sweep_models

    plain = _load(tmp_path, "")[1]
    sweep, tuned = _load(tmp_path, "context_window = 32768\ncompact_at = 0.6\n")
    (model,) = sweep_models(sweep.llm)
    assert (model.context_window, model.compact_at) == (32768, 0.6) and tuned != plain
    for bad, words in (
        ("context_window = 32768\ncompact_at = 1.5\n", "compact_at must be a share"),
        ("compact_at = 0.5\n", "compact_at needs the model's context_window"),
    ):
        with pytest.raises(SweepError, match=words):
            _load(tmp_path, bad)
