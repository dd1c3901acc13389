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


def summarize(df: pd.DataFrame, by: list[str], metrics: list[str]) -> pd.DataFrame:
    """One row per group: for each metric its mean, ci95_low, ci95_high and n."""
    rows = []
    groups = df.groupby(by, sort=False, dropna=False) if by else [((), df)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        for m in metrics:
            c = mean_ci(g[m].tolist())
            row.update({f"{m}_mean": c["mean"], f"{m}_ci95_low": c["ci95_low"], f"{m}_ci95_high": c["ci95_high"]})
            row["n"] = c["n"]
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
