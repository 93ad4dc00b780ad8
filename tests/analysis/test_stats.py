"""Statistics against independent computations: SciPy, a hand-worked Kaplan-Meier, textbook Holm and log-rank."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from staminad.analysis.stats import holm, kaplan_meier, logrank, mean_se, rmst, rmst_bootstrap, wilcoxon_paired


def test_mean_and_standard_error() -> None:
    """SE is the sample standard deviation over sqrt(n)."""
    mean, se = mean_se([1, 2, 3, 4])
    assert mean == 2.5 and se == pytest.approx(math.sqrt(5 / 3) / 2)


@pytest.mark.slow  # ~4-5 s of CPU on a busy 2-core box: over the fast tier's budget
def test_wilcoxon_matches_scipy_with_zero_differences_and_ties() -> None:
    """Paired Wilcoxon keeps zero differences (Pratt) and ties, as SciPy computes it."""
    a = [5, 7, 7, 3, 9, 4, 8, 6, 7, 2, 5, 5]
    b = [3, 7, 5, 3, 4, 4, 2, 6, 1, 2, 1, 3]
    expected = sps.wilcoxon(a, b, zero_method="pratt").pvalue
    assert wilcoxon_paired(a, b) == pytest.approx(expected)
    assert wilcoxon_paired(a, b) < 0.05


def test_wilcoxon_with_no_difference_is_one() -> None:
    """Identical paired samples give p = 1 instead of an error."""
    assert wilcoxon_paired([3, 4, 5], [3, 4, 5]) == 1.0


def test_holm_textbook_example() -> None:
    """Holm on (0.01, 0.04, 0.03, 0.005): adjusted (0.03, 0.06, 0.06, 0.02), monotone in rank."""
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_kaplan_meier_hand_worked() -> None:
    """Durations 1,2,2+,3,4+,5 (+ censored): S = 5/6, 2/3, 4/9, 0; RMST(5) = 1 + 5/6 + 2/3 + 2*4/9."""
    km = kaplan_meier([1, 2, 2, 3, 4, 5], [True, True, False, True, False, True])
    assert km.times == (1, 2, 3, 5)
    assert km.survival == pytest.approx((5 / 6, 2 / 3, 4 / 9, 0.0))
    assert km.at_risk == (6, 5, 3, 1)
    assert rmst(km, 5) == pytest.approx(1 + 5 / 6 + 2 / 3 + 8 / 9)
    assert rmst(km, 2.5) == pytest.approx(1 + 5 / 6 + 0.5 * 2 / 3)


def test_rmst_without_events_is_tau_and_bootstrap_brackets_the_estimate() -> None:
    """All censored at N: RMST equals tau; the bootstrap CI contains the point estimate."""
    assert rmst(kaplan_meier([7, 7, 7], [False] * 3), 7) == 7
    point, lo, hi = rmst_bootstrap([1, 2, 3, 4, 5, 7, 7], [True] * 5 + [False] * 2, 7, n_boot=500)
    assert lo <= point <= hi and lo < hi


def test_logrank_hand_worked() -> None:
    """Groups (1, 2) and (3, 4), all events: O-E = 7/6, V = 17/36, chi2 = 49/17."""
    chi2, p = logrank([1, 2], [True, True], [3, 4], [True, True])
    assert chi2 == pytest.approx((7 / 6) ** 2 / (1 / 4 + 2 / 9))
    assert p == pytest.approx(sps.chi2.sf(chi2, 1))
    assert logrank([1, 2], [True, True], [1, 2], [True, True])[0] == pytest.approx(0.0)
