r"""Calibration the way the field reads it: per model (and condition), with intervals and contrasts.

Each readable binary self-prediction with a confidence is read as a probability forecast
of its outcome: :math:`p = ` ``confidence`` when the prediction is ``true`` and
``1 - confidence`` when it is ``false`` (the record contract: ``confidence`` is the stated
probability that the prediction is right). In a "will I get this right?" study (a records
mapping with ``[prediction] threshold``) :math:`p` is the stated chance of answering right
and the outcome is whether the answer was right, so the numbers are the field's:

``ece``
    expected calibration error: the record-weighted mean of :math:`|\bar p - \bar y|` over
    10 equal-width bins of :math:`p` (``selfmodel.analyses.skill.calibration_curve``);
``brier``
    :math:`\overline{(p - y)^2}`;
``overconfidence``
    mean stated probability minus the observed frequency, :math:`\bar p - \bar y`
    (positive: overconfident).

Every group is one model (never pooled within a family: pooling hid an ECE of 0.32
against 0.70 in issue 29's study), or one model x condition. Intervals are an item
bootstrap: items (``task``, ``item_id``) are resampled with replacement, all of an item's
records (every model, condition and repeat) together, so the replicates of two groups are
paired and a contrast's interval accounts for the shared items. A contrast between two
groups of one factor (models, or conditions) is the *reduction* of the error from the
first to the second level (``"b - a"``: error of ``a`` minus error of ``b``; for
overconfidence the reduction of its absolute value), decided with the verdict's rule
(:func:`selfmodel.decisions.hypotheses.decide`, its HDI mass) on the bootstrap replicates and a ROPE
of :data:`CALIBRATION_ROPE` in the metric's own units: ``improves`` means ``b`` is better
calibrated by more than the ROPE. The bootstrap interval is a percentile-type interval of
the sampling distribution, not a posterior: ``interval`` says so.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations
from pathlib import Path
from typing import Any, Final

import numpy as np
import polars as pl

from selfmodel.analyses.skill import DEFAULT_BINS, calibration_curve
from selfmodel.common.paths import PACKAGE_DATA, shipped_study
from selfmodel.decisions.hypotheses import DecisionRule, decide
from selfmodel.records.cells import NO_CONDITION, self_predictions

#: ROPE of a calibration contrast, in the metric's units (ECE, Brier, overconfidence).
CALIBRATION_ROPE: Final = 0.02
#: Bootstrap replicates.
N_BOOT: Final = 1000
N_BINS: Final = DEFAULT_BINS
METRICS: Final = ("ece", "brier", "overconfidence")


#: The calibration study of these contrasts (``validation/calibration_contrast_study.py --ship``).
CALIBRATION_DATA: Final = PACKAGE_DATA / "calibration_contrast_calibration.json"


def calibration(path: Path = CALIBRATION_DATA) -> dict[str, Any]:
    """The shipped study of these decisions on an independent generator, or why there is none."""
    return shipped_study(path)


def forecasts(records: pl.DataFrame) -> pl.DataFrame:
    """Readable binary self-predictions with a confidence, as forecasts ``p`` of outcome ``y``.

    Columns ``model, condition, task, item`` (``task|item_id``), ``p``, ``y``.

    Examples
    --------
    >>> r = pl.DataFrame({"model": ["a", "a"], "task": ["t", "t"], "item_id": ["1", "2"],
    ...     "predictor": [None, None], "prediction": ["true", "false"],
    ...     "outcome": ["true", "true"], "correct": [True, False], "status": ["ok", "ok"],
    ...     "confidence": [0.8, 0.7]})
    >>> forecasts(r).select("p", "y").rows()
    [(0.8, True), (0.30000000000000004, True)]
    """
    recs = self_predictions(records)
    cond = (pl.col("condition").fill_null(NO_CONDITION) if "condition" in recs.columns
            else pl.lit(NO_CONDITION))
    conf = pl.col("confidence").cast(pl.Float64)
    return recs.filter(
        (pl.col("status") == "ok") & pl.col("correct").is_not_null() & conf.is_not_null()
        & pl.col("prediction").is_in(["true", "false"])
        & pl.col("outcome").is_in(["true", "false"])
    ).select(
        "model",
        cond.cast(pl.Utf8).alias("condition"),
        "task",
        pl.format("{}|{}", "task", "item_id").alias("item"),
        pl.when(pl.col("prediction") == "true").then(conf).otherwise(1.0 - conf).alias("p"),
        (pl.col("outcome") == "true").alias("y"),
    )


def metrics(p: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> dict[str, float]:
    """ECE (10 equal-width bins), Brier and overconfidence of forecasts ``p`` of ``y``.

    ``w`` are record weights (bootstrap multiplicities); default 1 each.

    Examples
    --------
    >>> m = metrics(np.array([0.9, 0.9, 0.6, 0.6]), np.array([1, 0, 1, 1]))
    >>> {k: round(v, 3) for k, v in m.items()}
    {'ece': 0.4, 'brier': 0.285, 'overconfidence': 0.0}
    """
    w = np.ones_like(p) if w is None else w
    total = w.sum()
    idx = np.clip(np.floor(p * N_BINS + 1e-9).astype(int), 0, N_BINS - 1)
    pb = np.bincount(idx, weights=w * p, minlength=N_BINS)
    yb = np.bincount(idx, weights=w * y, minlength=N_BINS)
    ece = float(np.abs(pb - yb).sum() / total)  # sum_b n_b/N |mean p_b - mean y_b|
    return {"ece": ece, "brier": float((w * (p - y) ** 2).sum() / total),
            "overconfidence": float((w * (p - y)).sum() / total)}


def reliability(p: np.ndarray, y: np.ndarray) -> dict[str, list[Any]]:
    """The reliability diagram: per bin, records, mean stated probability, observed frequency.

    The bins of :func:`selfmodel.analyses.skill.calibration_curve` (``None`` in empty bins).
    """
    c = calibration_curve(p, y.astype(bool), n_bins=N_BINS)
    return {"bin_n": c["bin_n"], "bin_p": c["bin_confidence"], "bin_y": c["bin_accuracy"]}


def _replicates(frame: pl.DataFrame, keys: list[tuple[str, ...]], by: list[str],
                n_boot: int, seed: int) -> dict[tuple[str, ...], np.ndarray]:
    """Bootstrap metrics per group: group -> array (n_boot, len(METRICS)); items resampled."""
    items = sorted(frame["item"].unique().to_list())
    code = {it: i for i, it in enumerate(items)}
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(len(items), np.full(len(items), 1 / len(items)), size=n_boot)
    out = {}
    for key in keys:
        g = frame.filter(pl.all_horizontal([pl.col(c) == v for c, v in zip(by, key, strict=True)]))
        p, y = g["p"].to_numpy(), g["y"].to_numpy().astype(float)
        item_idx = np.array([code[i] for i in g["item"].to_list()])
        reps = np.full((n_boot, len(METRICS)), np.nan)
        for r in range(n_boot):
            w = counts[r, item_idx].astype(float)
            if w.sum() > 0:
                reps[r] = list(metrics(p, y, w).values())
        out[key] = reps
    return out


def calibration_table(records: pl.DataFrame, *, by: tuple[str, ...] = ("model",),
                      rule: DecisionRule | None = None, n_boot: int = N_BOOT,
                      seed: int = 0) -> dict[str, Any]:
    """Per-group calibration with bootstrap intervals, and decided contrasts of the groups.

    Parameters
    ----------
    records
        Canonical records.
    by
        ``("model",)``, ``("model", "condition")`` or ``("model", "task")``.
    rule
        The declared rule (its HDI mass is used; the ROPE is :data:`CALIBRATION_ROPE`).
    n_boot, seed
        Bootstrap replicates and their seed.

    Returns
    -------
    dict
        ``by``, ``interval``, ``rope``, ``groups`` (one per group: the keys of ``by``, ``n``,
        each metric with ``<metric>_low``/``_high``, and the reliability diagram) and
        ``contrasts`` (list of ``{factor, within, contrast, metric, **decision}``).
    """
    rule = replace(rule or DecisionRule(), rope=CALIBRATION_ROPE)
    frame = forecasts(records)
    base = {"by": list(by), "rope": CALIBRATION_ROPE, "n_boot": n_boot,
            "interval": f"item bootstrap ({n_boot} replicates), {rule.hdi_prob:.0%} HDI of the "
                        "replicates", "bins": N_BINS}
    if frame.height == 0:
        return {**base, "groups": [], "contrasts": [],
                "reason": "no readable binary self-prediction with a confidence"}
    keys = sorted(frame.select(list(by)).unique().iter_rows())
    reps = _replicates(frame, keys, list(by), n_boot, seed)
    groups = []
    for key in keys:
        g = frame.filter(pl.all_horizontal([pl.col(c) == v for c, v in zip(by, key, strict=True)]))
        p, y = g["p"].to_numpy(), g["y"].to_numpy().astype(float)
        row: dict[str, Any] = {**dict(zip(by, key, strict=True)), "n": g.height,
                               "mean_stated": float(p.mean()), "frequency": float(y.mean())}
        for j, (name, value) in enumerate(metrics(p, y).items()):
            lo, hi = np.nanquantile(reps[key][:, j], [(1 - rule.hdi_prob) / 2,
                                                      (1 + rule.hdi_prob) / 2])
            row |= {name: value, f"{name}_low": float(lo), f"{name}_high": float(hi)}
        groups.append(row | reliability(p, y))
    return {**base, "groups": groups, "contrasts": _contrasts(keys, reps, list(by), rule),
            "reason": None}


def _contrasts(keys: list[tuple[str, ...]], reps: dict[tuple[str, ...], np.ndarray],
               by: list[str], rule: DecisionRule) -> list[dict[str, Any]]:
    """Every pair of groups that differ in exactly one factor, per metric, decided."""
    out = []
    for a, b in combinations(keys, 2):
        differ = [i for i in range(len(by)) if a[i] != b[i]]
        if len(differ) != 1:
            continue
        (i,) = differ
        within = {by[j]: a[j] for j in range(len(by)) if j != i}
        for j, name in enumerate(METRICS):
            ra, rb = reps[a][:, j], reps[b][:, j]
            diff = (np.abs(ra) - np.abs(rb)) if name == "overconfidence" else ra - rb
            diff = diff[np.isfinite(diff)]
            out.append({"factor": by[i], "within": within, "contrast": f"{b[i]} - {a[i]}",
                        "metric": name, "quantity": f"reduction of {name} from {a[i]} to {b[i]}",
                        **decide(diff, rule, n_models=rule.min_models)})
    return out
