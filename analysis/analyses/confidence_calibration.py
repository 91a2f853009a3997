r"""Confidence calibration the way the field reads it: per model (and condition), with intervals and contrasts.

Each readable binary self-prediction with a confidence is read as a probability forecast
of its outcome: :math:`p = ` ``confidence`` when the prediction is ``true`` and
``1 - confidence`` when it is ``false`` (the record contract: ``confidence`` is the stated
probability that the prediction is right). In a "will I get this right?" study (a records
mapping with ``[prediction] threshold``) :math:`p` is the stated chance of answering right
and the outcome is whether the answer was right, so the numbers are the field's. The metrics (the two ECEs, Brier, overconfidence), the item
bootstrap and how a contrast between two models or conditions is decided: ``docs/analyses.md``.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations
from typing import Any, Final

import numpy as np
import polars as pl

from selfmodel.analyses.skill import DEFAULT_BINS, bin_edges, calibration_curve
from selfmodel.common.paths import PACKAGE_DATA
from selfmodel.decisions.hypotheses import DecisionRule, decide
from selfmodel.records.cells import NO_CONDITION, self_predictions

#: ROPE of a confidence-calibration contrast, in the metric's units (ECE, Brier, overconfidence).
CONFIDENCE_CALIBRATION_ROPE: Final = 0.02
#: Bootstrap replicates.
N_BOOT: Final = 1000
N_BINS: Final = DEFAULT_BINS
#: The metrics whose contrasts are decided (those of the shipped operating characteristics).
METRICS: Final = ("ece_stated_probability", "brier", "overconfidence")
#: Every metric of a group, each with its interval.
SHOWN: Final = (*METRICS, "ece_prediction_confidence")
#: What each ECE bins, in the report's words.
ECE_NAMES: Final = {"ece_stated_probability": "ECE of the stated probability",
                    "ece_prediction_confidence": "ECE of the prediction's confidence"}


#: The operating characteristics of these contrasts (``validation/confidence_calibration_study.py --ship``;
#: an independent generator); read with ``shipped_study``.
OPERATING_CHARACTERISTICS_DATA: Final = PACKAGE_DATA / "confidence_calibration_operating_characteristics.json"


def forecasts(records: pl.DataFrame) -> pl.DataFrame:
    """Readable binary self-predictions with a confidence, as forecasts ``p`` of outcome ``y``.

    Columns ``model, condition, task, item`` (``task|item_id``), ``p``, ``y``, and ``q``
    (the confidence as stated: that the prediction is right) with ``hit`` (it was).

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
        conf.alias("q"),
        pl.col("correct").cast(pl.Boolean).alias("hit"),
    )


def binned_ece(x: np.ndarray, hit: np.ndarray, w: np.ndarray) -> float:
    r"""ECE of probabilities ``x`` of events ``hit``: 10 equal-width bins of ``x``, weights ``w``.

    :math:`\sum_b |\sum_{i \in b} w_i x_i - \sum_{i \in b} w_i h_i| / \sum_i w_i`, i.e.
    :math:`\sum_b \frac{n_b}{n} |\bar x_b - \bar h_b|`; the bins of
    ``selfmodel.analyses.skill.calibration_curve``.
    """
    idx = np.clip(np.floor(x * N_BINS + 1e-9).astype(int), 0, N_BINS - 1)
    xb = np.bincount(idx, weights=w * x, minlength=N_BINS)
    hb = np.bincount(idx, weights=w * hit, minlength=N_BINS)
    return float(np.abs(xb - hb).sum() / w.sum())


def metrics(p: np.ndarray, y: np.ndarray, w: np.ndarray | None = None, *,
            q: np.ndarray | None = None, hit: np.ndarray | None = None) -> dict[str, float]:
    """The :data:`METRICS` of forecasts ``p`` of ``y``; with ``q`` and ``hit``, the other ECE too.

    ``w`` are record weights (bootstrap multiplicities); default 1 each. ``q`` is the stated
    confidence that the prediction is right and ``hit`` whether it was
    (``ece_prediction_confidence``).

    Examples
    --------
    >>> m = metrics(np.array([0.9, 0.9, 0.6, 0.6]), np.array([1, 0, 1, 1]))
    >>> {k: round(v, 3) for k, v in m.items()}
    {'ece_stated_probability': 0.4, 'brier': 0.285, 'overconfidence': 0.0}
    >>> m = metrics(np.array([0.9, 0.1]), np.array([1, 1]), q=np.array([0.9, 0.9]),
    ...             hit=np.array([1, 0]))
    >>> round(m["ece_stated_probability"], 3), round(m["ece_prediction_confidence"], 3)
    (0.5, 0.4)
    """
    w = np.ones_like(p) if w is None else w
    total = w.sum()
    out = {"ece_stated_probability": binned_ece(p, y, w),
           "brier": float((w * (p - y) ** 2).sum() / total),
           "overconfidence": float((w * (p - y)).sum() / total)}
    if q is not None and hit is not None:
        out["ece_prediction_confidence"] = binned_ece(q, hit, w)
    return out


def reliability(p: np.ndarray, y: np.ndarray) -> dict[str, list[Any]]:
    """The reliability diagram: per bin, records, mean stated probability, observed frequency.

    The bins of :func:`selfmodel.analyses.skill.calibration_curve` (``None`` in empty bins).
    """
    c = calibration_curve(p, y.astype(bool), n_bins=N_BINS)
    return {"bin_n": c["bin_n"], "bin_p": c["bin_confidence"], "bin_y": c["bin_accuracy"]}


def _replicates(frame: pl.DataFrame, keys: list[tuple[str, ...]], by: list[str],
                n_boot: int, seed: int) -> dict[tuple[str, ...], np.ndarray]:
    """Bootstrap metrics per group: group -> array (n_boot, len(SHOWN)); items resampled."""
    items = sorted(frame["item"].unique().to_list())
    code = {it: i for i, it in enumerate(items)}
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(len(items), np.full(len(items), 1 / len(items)), size=n_boot)
    out = {}
    for key in keys:
        g = frame.filter(pl.all_horizontal([pl.col(c) == v for c, v in zip(by, key, strict=True)]))
        p, y = g["p"].to_numpy(), g["y"].to_numpy().astype(float)
        q, hit = g["q"].to_numpy(), g["hit"].to_numpy().astype(float)
        item_idx = np.array([code[i] for i in g["item"].to_list()])
        reps = np.full((n_boot, len(SHOWN)), np.nan)
        for r in range(n_boot):
            w = counts[r, item_idx].astype(float)
            if w.sum() > 0:
                m = metrics(p, y, w, q=q, hit=hit)
                reps[r] = [m[k] for k in SHOWN]
        out[key] = reps
    return out


def confidence_calibration_table(records: pl.DataFrame, *, by: tuple[str, ...] = ("model",),
                                 rule: DecisionRule | None = None, n_boot: int = N_BOOT,
                                 seed: int = 0) -> dict[str, Any]:
    """Per-group confidence calibration with bootstrap intervals, and decided contrasts of the groups.

    Parameters
    ----------
    records
        Canonical records.
    by
        ``("model",)``, ``("model", "condition")`` or ``("model", "task")``.
    rule
        The declared rule (its HDI mass is used; the ROPE is :data:`CONFIDENCE_CALIBRATION_ROPE`).
    n_boot, seed
        Bootstrap replicates and their seed.

    Returns
    -------
    dict
        ``by``, ``interval``, ``rope``, ``bins`` and ``bin_edges`` (of both ECEs and the
        reliability diagram), ``measures`` (what each ECE bins, :data:`ECE_NAMES`),
        ``groups`` (one per group: the keys of ``by``, ``n``, each metric of :data:`SHOWN`
        with ``<metric>_low``/``_high``, and the reliability diagram) and ``contrasts``
        (list of ``{factor, within, contrast, metric, **decision}``, ``metric`` one of
        :data:`METRICS`).
    """
    rule = replace(rule or DecisionRule(), rope=CONFIDENCE_CALIBRATION_ROPE)
    frame = forecasts(records)
    base = {"by": list(by), "rope": CONFIDENCE_CALIBRATION_ROPE, "n_boot": n_boot,
            "interval": f"item bootstrap ({n_boot} replicates), {rule.hdi_prob:.0%} HDI of the "
                        "replicates", "bins": N_BINS,
            "bin_edges": bin_edges(N_BINS).tolist(),
            "binning": f"{N_BINS} equal-width bins over [0, 1], each [b/{N_BINS}, (b+1)/{N_BINS}), "
                       "the last one closed",
            "measures": {
                "ece_stated_probability": "ECE of the stated probability: bins of p, the stated "
                                          "probability of the outcome (of success), against the "
                                          "outcome",
                "ece_prediction_confidence": "ECE of the prediction's confidence: bins of the "
                                             "confidence that the prediction is right, against "
                                             "whether it was (the skill table's ECE)"}}
    if frame.height == 0:
        return {**base, "groups": [], "contrasts": [],
                "reason": "no readable binary self-prediction with a confidence"}
    keys = sorted(frame.select(list(by)).unique().iter_rows())
    reps = _replicates(frame, keys, list(by), n_boot, seed)
    groups = []
    for key in keys:
        g = frame.filter(pl.all_horizontal([pl.col(c) == v for c, v in zip(by, key, strict=True)]))
        p, y = g["p"].to_numpy(), g["y"].to_numpy().astype(float)
        point = metrics(p, y, q=g["q"].to_numpy(), hit=g["hit"].to_numpy().astype(float))
        row: dict[str, Any] = {**dict(zip(by, key, strict=True)), "n": g.height,
                               "mean_stated": float(p.mean()), "frequency": float(y.mean())}
        for j, name in enumerate(SHOWN):
            lo, hi = np.nanquantile(reps[key][:, j], [(1 - rule.hdi_prob) / 2,
                                                      (1 + rule.hdi_prob) / 2])
            row |= {name: point[name], f"{name}_low": float(lo), f"{name}_high": float(hi)}
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
                        "metric": name, "quantity": f"reduction of {ECE_NAMES.get(name, name)} from {a[i]} to {b[i]}",
                        **decide(diff, rule, n_models=rule.min_models)})
    return out
