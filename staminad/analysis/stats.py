"""Statistics: SE, paired Wilcoxon + Holm, Kaplan-Meier with right-censoring, log-rank, RMST with a
scenario-clustered bootstrap. Pure numpy/scipy over plain sequences, so each is checked against an
independent computation in the tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
import numpy as np
from scipy import stats as sps


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and its standard error (sample SD / sqrt(n)); SE is 0 for fewer than two values."""
    if not values:
        return math.nan, math.nan
    arr = np.asarray(values, dtype=float)
    se = float(arr.std(ddof=1) / math.sqrt(len(arr))) if len(arr) > 1 else 0.0
    return float(arr.mean()), se


def wilcoxon_paired(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p of the Wilcoxon signed-rank test on paired samples.

    Zero differences are kept with Pratt's method and ties get average ranks; when every difference
    is zero there is no evidence of a difference and p is 1.
    """
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if len(d) == 0 or np.all(d == 0):
        return 1.0
    return float(sps.wilcoxon(a, b, zero_method="pratt", alternative="two-sided").pvalue)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order (monotone, capped at 1)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


class KMCurve(msgspec.Struct, frozen=True):
    """Kaplan-Meier estimate: S(t) just after each distinct event time, with the at-risk counts."""

    times: tuple[float, ...]
    survival: tuple[float, ...]
    at_risk: tuple[int, ...]
    events: tuple[int, ...]

    def at(self, t: float) -> float:
        s = 1.0
        for time, value in zip(self.times, self.survival, strict=True):
            if time <= t:
                s = value
        return s


def kaplan_meier(durations: Sequence[float] | np.ndarray, observed: Sequence[bool] | np.ndarray) -> KMCurve:
    """Product-limit estimator; `observed[i]` is False for a right-censored duration."""
    d = np.asarray(durations, dtype=float)
    e = np.asarray(observed, dtype=bool)
    times, surv, risk, events = [], [], [], []
    s = 1.0
    for t in np.unique(d[e]):
        n = int(np.sum(d >= t))
        k = int(np.sum((d == t) & e))
        s *= 1 - k / n
        times.append(float(t))
        surv.append(s)
        risk.append(n)
        events.append(k)
    return KMCurve(tuple(times), tuple(surv), tuple(risk), tuple(events))


def rmst(curve: KMCurve, tau: float) -> float:
    """Restricted mean survival time: the area under S(t) from 0 to tau."""
    area, last_t, last_s = 0.0, 0.0, 1.0
    for t, s in zip(curve.times, curve.survival, strict=True):
        if t >= tau:
            break
        area += (t - last_t) * last_s
        last_t, last_s = t, s
    return area + (tau - last_t) * last_s


# Resample counts a report accepts: below 100 the 95% percentile CI rests on a handful of draws; above 100000 the
# CI no longer moves while the time grows linearly (the report runs one bootstrap per configuration).
MIN_BOOTSTRAP, MAX_BOOTSTRAP = 100, 100_000


def rmst_bootstrap(
    durations: Sequence[float],
    observed: Sequence[bool],
    tau: float,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float, float]:
    """RMST(tau) and a percentile CI from resampling scenarios (the cluster) with replacement."""
    d = np.asarray(durations, dtype=float)
    e = np.asarray(observed, dtype=bool)
    point = rmst(kaplan_meier(d, e), tau)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        idx = rng.integers(0, len(d), len(d))
        boots.append(rmst(kaplan_meier(d[idx], e[idx]), tau))
    lo, hi = np.percentile(boots, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return point, float(lo), float(hi)


def logrank(d1: Sequence[float], e1: Sequence[bool], d2: Sequence[float], e2: Sequence[bool]) -> tuple[float, float]:
    """Two-sample log-rank test: (chi-square statistic with 1 df, p-value)."""
    t1, o1 = np.asarray(d1, float), np.asarray(e1, bool)
    t2, o2 = np.asarray(d2, float), np.asarray(e2, bool)
    all_t = np.unique(np.concatenate([t1[o1], t2[o2]]))
    observed_minus_expected, variance = 0.0, 0.0
    for t in all_t:
        n1, n2 = np.sum(t1 >= t), np.sum(t2 >= t)
        k1, k2 = np.sum((t1 == t) & o1), np.sum((t2 == t) & o2)
        n, k = n1 + n2, k1 + k2
        if n < 2:
            continue
        observed_minus_expected += k1 - k * n1 / n
        variance += k * (n1 / n) * (n2 / n) * (n - k) / (n - 1)
    if variance == 0:
        return 0.0, 1.0
    chi2 = observed_minus_expected**2 / variance
    return float(chi2), float(sps.chi2.sf(chi2, 1))
