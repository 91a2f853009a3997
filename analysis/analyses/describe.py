"""Descriptive statistics per model x task, against the right baselines.

``accuracy`` excludes unreadable predictions; ``accuracy_strict`` counts them as wrong
(what most papers report). Rows with nothing to score (status ``not_asked``: no prediction
was asked, by design; ``unanswered``: no outcome) are in neither: ``n_not_asked`` and
``n_unanswered`` count them. ``baseline_accuracy`` is the *mode baseline*: the accuracy of
always predicting the cell's most common outcome. A model that always says "yes, the word
will appear" is not skilled just because words usually appear; ``skill_over_baseline`` is
accuracy minus that baseline.

Intervals are Wilson score intervals (Wilson 1927, JASA 22:209) for the cell's records
taken as independent; they ignore item clustering and are descriptive only. Inference on
scale is made by the hierarchical model, not from these.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from scipy.stats import norm


def wilson_interval(
    k: np.ndarray, n: np.ndarray, *, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for binomial proportions (NaN where ``n == 0``).

    Examples
    --------
    >>> lo, hi = wilson_interval(np.array([8]), np.array([10]))
    >>> round(float(lo[0]), 4), round(float(hi[0]), 4)
    (0.4902, 0.9433)
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    z = norm.ppf(0.5 + level / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denom = 1 + z**2 / n
        centre = (p + z**2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
    return centre - half, centre + half


def _num(v: Any) -> float | None:
    if v is None:
        return None
    f = float(v)
    return None if not np.isfinite(f) else round(f, 6)


def by_model_task(cells: pl.DataFrame) -> list[dict[str, Any]]:
    """One row per model x task with accuracy, intervals, baselines and SDT rates."""
    k = cells["k"].to_numpy()
    n = cells["n"].to_numpy()
    lo, hi = wilson_interval(k, n)
    rows = []
    for i, c in enumerate(cells.iter_rows(named=True)):
        acc = c["k"] / c["n"] if c["n"] else None
        base = c["mode_outcome_share"] if c["n"] else None
        binary = bool(c["binary"]) and c["n"] > 0
        rows.append(
            {
                "model": c["model"],
                "task": c["task"],
                "family": c.get("family"),
                "n": int(c["n"]),
                "n_total": int(c["n_total"]),
                "n_unreadable": int(c["n_unreadable"]),
                "n_not_asked": int(c["n_not_asked"]),
                "n_unanswered": int(c["n_unanswered"]),
                "accuracy": _num(acc),
                "ci_low": _num(lo[i]),
                "ci_high": _num(hi[i]),
                "accuracy_strict": _num(c["k_strict"] / c["n_total"]) if c["n_total"] else None,
                "baseline_accuracy": _num(base),
                "skill_over_baseline": _num(acc - base)
                if acc is not None and base is not None
                else None,
                "outcome_rate": _num(c["n_signal"] / c["n"]) if binary else None,
                "prediction_yes_rate": _num(c["n_pred_yes"] / c["n"]) if binary else None,
                "hit_rate": _num(c["hits"] / c["n_signal"]) if binary and c["n_signal"] else None,
                "false_alarm_rate": _num(c["false_alarms"] / c["n_noise"])
                if binary and c["n_noise"]
                else None,
            }
        )
    return rows


def by_task(cells: pl.DataFrame) -> list[dict[str, Any]]:
    """Per task: models, records, outcome base rate and pooled accuracy."""
    agg = (
        cells.group_by("task")
        .agg(
            pl.col("model").n_unique().alias("models"),
            pl.col("n_total").sum().alias("n_total"),
            pl.col("n").sum().alias("n"),
            pl.col("k").sum().alias("k"),
            pl.col("n_unreadable").sum().alias("n_unreadable"),
            pl.col("n_not_asked").sum().alias("n_not_asked"),
            pl.col("n_unanswered").sum().alias("n_unanswered"),
            pl.col("n_signal").sum().alias("n_signal"),
            pl.col("binary").all().alias("binary"),
        )
        .sort("task")
    )
    return [
        {
            "task": r["task"],
            "models": int(r["models"]),
            "n_total": int(r["n_total"]),
            "n": int(r["n"]),
            "n_unreadable": int(r["n_unreadable"]),
            "n_not_asked": int(r["n_not_asked"]),
            "n_unanswered": int(r["n_unanswered"]),
            "accuracy": _num(r["k"] / r["n"]) if r["n"] else None,
            "outcome_base_rate": _num(r["n_signal"] / r["n"]) if r["binary"] and r["n"] else None,
        }
        for r in agg.iter_rows(named=True)
    ]
