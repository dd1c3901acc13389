"""Means and Student-t confidence intervals over replications."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> dict[str, float]:
    """Mean and the two-sided Student-t interval of the mean: mean ± t(n-1)·s/√n.
    With one value the interval is undefined (NaN); NaN values are left out."""
    x = np.asarray([v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))], dtype=float)
    n = len(x)
    if n == 0:
        return {"mean": math.nan, "ci95_low": math.nan, "ci95_high": math.nan, "n": 0}
    m = float(x.mean())
    if n == 1:
        return {"mean": m, "ci95_low": math.nan, "ci95_high": math.nan, "n": 1}
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return {"mean": m, "ci95_low": m - half, "ci95_high": m + half, "n": n}


def relative_half_width(values: Sequence[float]) -> float:
    """Half-width of the 95 % interval over |mean| (inf when undefined)."""
    c = mean_ci(values)
    if c["n"] < 2 or c["mean"] == 0 or math.isnan(c["ci95_high"]):
        return math.inf
    return (c["ci95_high"] - c["mean"]) / abs(c["mean"])


#: Metrics that are fractions (at most 1); every metric netbraid reports is
#: at least 0.
FRACTIONS = frozenset({"loss_rate", "mean_loss_rate", "jain", "share"})


def clip_to_range(c: dict[str, float], metric: str) -> dict[str, float]:
    """A Student-t interval clipped to what the quantity can be (≥ 0; ≤ 1
    for fractions): near a bound the symmetric interval would reach past it
    (a loss rate of 0, 0 and 1 % gives −0.6 % … 1.3 %)."""
    high = 1.0 if metric in FRACTIONS or metric.startswith("jain") else math.inf
    return {**c, "ci95_low": min(max(c["ci95_low"], 0.0), high), "ci95_high": min(max(c["ci95_high"], 0.0), high)}


def _decimals(width: float) -> int:
    """Decimal places that show `width` (> 0) to its significant digits:
    two when it starts with 1 or 2 (0.013, 1.4, 27), else one (0.05, 700)."""
    exp = math.floor(math.log10(width))
    return (1 if width / 10 ** exp < 3 else 0) - exp


def _fixed(x: float, decimals: int) -> str:
    return f"{x:.{decimals}f}" if decimals > 0 else f"{round(x, decimals):.0f}"


def _significant(x: float, digits: int) -> str:
    """`x` to `digits` significant digits, without an exponent below 10^9:
    24760, not 2.476e+04."""
    if x == 0 or not math.isfinite(x) or abs(x) >= 1e9 or abs(x) < 1e-4:
        return f"{x:.{digits}g}"
    place = digits - 1 - math.floor(math.log10(abs(x)))
    if place <= 0:
        return f"{round(x, place):.0f}"
    return f"{x:.{place}f}".rstrip("0").rstrip(".")  # as %g does: 122, not 122.0


def interval_text(c: dict[str, float], scale: float = 1.0, digits: int = 4) -> str:
    """"mean ± half-width", or "mean (low–high)" when the interval was
    clipped at a bound and is no longer symmetric. The interval's width sets
    the digits: the half-width to one or two significant digits and the mean
    to the same decimal place ("9.73 ± 0.05", "300 ± 700"); identical runs
    (no width) show the mean to `digits` significant digits, "± 0"."""
    mean, low, high = (c[k] * scale for k in ("mean", "ci95_low", "ci95_high"))
    noise = 1e-9 * max(abs(mean), 1e-300)
    if abs((mean - low) - (high - mean)) > noise:
        d = _decimals(max(mean - low, high - mean))
        return f"{_fixed(mean, d)} ({_fixed(low, d)}–{_fixed(high, d)})"
    half = high - mean
    if abs(half) <= noise:
        return f"{_significant(mean, digits)} ± 0"  # rounding noise of identical values
    d = _decimals(half)
    return f"{_fixed(mean, d)} ± {_fixed(half, d)}"


def summarize(df: pd.DataFrame, by: list[str], metrics: list[str]) -> pd.DataFrame:
    """One row per group: `n`, its runs, and for each metric its mean,
    ci95_low, ci95_high (clipped to the metric's range) and its own n (the
    runs that have it: a UDP flow has no RTT)."""
    if isinstance(by, str) or isinstance(metrics, str):
        raise ValueError("summarize: by and metrics are lists of column names, e.g. by=['flow'], "
                         "metrics=['goodput_bps']")
    missing = [c for c in [*by, *metrics] if c not in df.columns]
    if missing:
        raise ValueError(f"summarize: no column {', '.join(map(repr, missing))} in the table; its columns: "
                         f"{', '.join(map(str, df.columns))}")
    rows = []
    groups = df.groupby(by, sort=False, dropna=False) if by else [((), df)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        row["n"] = len(g)
        for m in metrics:
            c = clip_to_range(mean_ci(g[m].tolist()), m)
            row.update({f"{m}_mean": c["mean"], f"{m}_ci95_low": c["ci95_low"], f"{m}_ci95_high": c["ci95_high"],
                        f"{m}_n": c["n"]})
        rows.append(row)
    return pd.DataFrame(rows)


def mean_pm(c: dict[str, float], digits: int = 1) -> str:
    """A `mean_ci` result as "mean ± half-width" ("–" without runs, the mean
    alone with one run or no interval)."""
    if c["n"] == 0:
        return "–"
    if c["n"] < 2 or c["ci95_high"] != c["ci95_high"]:
        return f"{c['mean']:.{digits}f}"
    return f"{c['mean']:.{digits}f} ± {(c['ci95_high'] - c['ci95_low']) / 2:.{digits}f}"
