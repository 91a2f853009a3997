r"""Self-prediction skill beyond base rates, per model x task (binary predictions).

A model that always predicts "yes, I will refuse" is right on every prompt it refuses, and
says nothing about itself. The metrics here separate *skill* (telling the cases apart) from
*bias* (how often the model says yes) and from the *base rate* (how often the outcome
happens). They apply to cells whose readable predictions and outcomes are all
``"true"``/``"false"`` (``binary`` cells of :mod:`selfmodel.records.cells`); other cells get
``None`` for every binary metric.

Counts of a cell (readable self-predictions only, ``status == "ok"``, ``predictor ==
model``): hits :math:`h` (predicted true, outcome true), misses :math:`m`, false alarms
:math:`f` (predicted true, outcome false), correct rejections :math:`r`;
:math:`n_s = h + m`, :math:`n_n = f + r`, :math:`n = n_s + n_n`.

The count metrics (balanced accuracy, kappa, mode baseline, skill score, d' and criterion
with the log-linear correction and the constant-responder rule) and the confidence metrics
(Brier, AUROC, calibration curve, ECE), with their sources: ``docs/analyses.md``. All
outputs are JSON-serialisable (Python floats/ints/bools/None).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import polars as pl
from scipy.stats import norm, rankdata

from selfmodel.records.cells import CELL_KEY, self_predictions, to_cells

#: Default number of equal-width confidence bins.
DEFAULT_BINS: Final = 10

#: What the ECE of this module bins (``confidence_calibration.measure``; the report's words).
ECE_PREDICTION_CONFIDENCE: Final = (
    "ECE of the prediction's confidence: bins of the stated confidence that the prediction is "
    "right, against whether it was (ece_prediction_confidence; ece is the same number)"
)

#: What ``confidence`` is taken to mean (copied into outputs).
CONFIDENCE_SEMANTICS: Final = (
    "confidence = stated probability that the prediction is right; "
    "implied P(outcome true) = confidence if prediction is 'true' else 1 - confidence"
)


def _f(v: Any) -> float | None:
    """Float or None when missing or not finite."""
    if v is None:
        return None
    f = float(v)
    return f if np.isfinite(f) else None


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    """Non-finite floats -> None."""
    return {k: _f(v) if isinstance(v, float) else v for k, v in d.items()}


def _ratio(a: float, b: float) -> float | None:
    return float(a) / float(b) if b else None


#: Why a cell has no d' / criterion, or a d' of 0 without a criterion (``sdt_note``).
SDT_NO_NOISE: Final = "no outcome-false trial: the false-alarm rate does not exist"
SDT_NO_SIGNAL: Final = "no outcome-true trial: the hit rate does not exist"
SDT_CONSTANT: Final = (
    "constant responder (every prediction '{0}'): hit and false-alarm rates are both {1}, "
    "so d' = 0 (no discrimination) and the criterion is not finite"
)


def sdt_note(hits: float, n_signal: float, false_alarms: float, n_noise: float) -> str | None:
    """Why the SDT point estimate of one cell is undefined or fixed (``None`` when neither).

    Examples
    --------
    >>> sdt_note(950, 950, 50, 50)
    "constant responder (every prediction 'true'): hit and false-alarm rates are both 1, so d' = 0 (no discrimination) and the criterion is not finite"
    >>> sdt_note(10, 10, 0, 0)
    'no outcome-false trial: the false-alarm rate does not exist'
    >>> sdt_note(5, 10, 2, 10) is None
    True
    """
    if n_signal <= 0 and n_noise <= 0:
        return f"{SDT_NO_SIGNAL}; {SDT_NO_NOISE}"
    if n_noise <= 0:
        return SDT_NO_NOISE
    if n_signal <= 0:
        return SDT_NO_SIGNAL
    if hits >= n_signal and false_alarms >= n_noise:
        return SDT_CONSTANT.format("true", 1)
    if hits <= 0 and false_alarms <= 0:
        return SDT_CONSTANT.format("false", 0)
    return None


def sdt_arrays(
    hits: np.ndarray, n_signal: np.ndarray, false_alarms: np.ndarray, n_noise: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Sensitivity d' and criterion of many cells (counts may be weighted), log-linear corrected.

    NaN where the hit or false-alarm rate does not exist; d' = 0 and criterion NaN for a
    constant responder (``docs/analyses.md``). The one implementation behind every d' of the
    package.

    Examples
    --------
    >>> d, c = sdt_arrays(np.array([950, 45, 3]), np.array([950, 50, 3]),
    ...                   np.array([50, 20, 0]), np.array([50, 50, 0]))
    >>> d.round(3).tolist(), c.round(3).tolist()
    ([0.0, 1.486, nan], [nan, -0.495, nan])
    """
    h, s, f, n = (np.asarray(a, dtype=float) for a in (hits, n_signal, false_alarms, n_noise))
    h, s, f, n = np.broadcast_arrays(h, s, f, n)
    tol = 1e-9 * np.maximum(s + n, 1.0)  # bootstrap-weighted counts are sums of floats
    defined = (s > 0) & (n > 0)
    constant = defined & (((h >= s - tol) & (f >= n - tol)) | ((h <= tol) & (f <= tol)))
    with np.errstate(divide="ignore", invalid="ignore"):
        zh = norm.ppf((h + 0.5) / (s + 1.0))
        zf = norm.ppf((f + 0.5) / (n + 1.0))
    d = np.where(defined, zh - zf, np.nan)
    c = np.where(defined, -0.5 * (zh + zf), np.nan)
    return np.where(constant, 0.0, d), np.where(constant, np.nan, c)


def sdt_cells(cells: pl.DataFrame) -> pl.DataFrame:
    r"""Binary cells whose d' the data can inform (the signal-detection model's input).

    Both outcomes observed (``n_signal > 0`` and ``n_noise > 0``) and not a constant
    responder. A cell with one outcome only, or whose predictions are all the same, has a
    flat profile likelihood in d' (for every d' some criterion fits the data exactly): in a
    hierarchical model its d' would come from the criterion's prior and, for a constant
    responder, from the unequal counts (always "yes": the log likelihood's derivative in d'
    at :math:`d' = 0` is :math:`\tfrac12 \lambda(-c) (n_s - n_n)`, :math:`\lambda` the
    inverse Mills ratio), not from the cell.
    :func:`excluded_sdt_cells` lists the cells left out, with the reason.
    """
    s, n = pl.col("n_signal"), pl.col("n_noise")
    yes = pl.col("hits") + pl.col("false_alarms")
    return cells.filter(pl.col("binary") & (s > 0) & (n > 0) & (yes > 0) & (yes < s + n))


def excluded_sdt_cells(cells: pl.DataFrame) -> list[dict[str, Any]]:
    """Binary cells with readable records that :func:`sdt_cells` leaves out: model, task, reason."""
    kept = sdt_cells(cells).select(*CELL_KEY)
    out = cells.filter(pl.col("binary") & ((pl.col("n_signal") + pl.col("n_noise")) > 0))
    out = out.join(kept, on=list(CELL_KEY), how="anti").sort(list(CELL_KEY))
    return [
        {"model": r["model"], "task": r["task"],
         "reason": sdt_note(r["hits"], r["n_signal"], r["false_alarms"], r["n_noise"])}
        for r in out.iter_rows(named=True)
    ]


def sdt_loglinear(
    hits: int, n_signal: int, false_alarms: int, n_noise: int
) -> tuple[float | None, float | None]:
    """SDT sensitivity and criterion with the log-linear correction (Hautus 1995).

    Parameters
    ----------
    hits, n_signal
        Predicted-true among outcome-true trials, and the number of outcome-true trials.
    false_alarms, n_noise
        Predicted-true among outcome-false trials, and the number of outcome-false trials.

    Returns
    -------
    (d', c)
        ``(None, None)`` when ``n_signal`` or ``n_noise`` is 0; ``(0.0, None)`` for a
        constant responder (:func:`sdt_note` says why).

    Examples
    --------
    >>> d, c = sdt_loglinear(10, 10, 0, 10)   # perfect rates stay finite
    >>> round(d, 4), abs(round(c, 4))
    (3.3812, 0.0)
    >>> d, c = sdt_loglinear(45, 50, 20, 50)  # H = .9, F = .4 (corrected .892, .402)
    >>> round(d, 3), round(c, 3)
    (1.486, -0.495)
    >>> sdt_loglinear(950, 950, 50, 50)       # always "true": no discrimination
    (0.0, None)
    """
    d, c = sdt_arrays(np.array([hits]), np.array([n_signal]), np.array([false_alarms]),
                      np.array([n_noise]))
    return _f(d[0]), _f(c[0])


def binary_metrics(
    hits: int, misses: int, false_alarms: int, correct_rejections: int
) -> dict[str, Any]:
    """Skill metrics of one 2x2 table of prediction x outcome.

    Parameters
    ----------
    hits, misses, false_alarms, correct_rejections
        Counts of (predicted true, outcome true), (false, true), (true, false),
        (false, false).

    Returns
    -------
    dict
        ``n``, ``accuracy``, ``hit_rate``, ``false_alarm_rate``, ``balanced_accuracy``,
        ``kappa``, ``outcome_rate``, ``prediction_yes_rate``, ``mode_baseline``,
        ``skill_over_mode``, ``skill_score``, ``dprime``, ``criterion``; ``None`` where
        undefined (see ``docs/analyses.md``); ``sdt_note``: why d' / criterion are
        undefined or fixed, ``None`` otherwise.

    Examples
    --------
    Always saying "yes" when the outcome is usually yes: high accuracy, no skill.

    >>> m = binary_metrics(80, 0, 20, 0)
    >>> m["accuracy"], m["mode_baseline"], m["kappa"], m["balanced_accuracy"]
    (0.8, 0.8, 0.0, 0.5)
    >>> m["dprime"], m["criterion"]
    (0.0, None)
    """
    h, mi, fa, cr = (int(v) for v in (hits, misses, false_alarms, correct_rejections))
    if min(h, mi, fa, cr) < 0:
        raise ValueError("counts must be non-negative")
    ns, nn = h + mi, fa + cr
    n = ns + nn
    out: dict[str, Any] = {
        "n": n,
        "accuracy": None,
        "hit_rate": _ratio(h, ns),
        "false_alarm_rate": _ratio(fa, nn),
        "balanced_accuracy": None,
        "kappa": None,
        "outcome_rate": None,
        "prediction_yes_rate": None,
        "mode_baseline": None,
        "skill_over_mode": None,
        "skill_score": None,
        "dprime": None,
        "criterion": None,
        "sdt_note": sdt_note(h, ns, fa, nn),
    }
    if n == 0:
        return out
    acc = (h + cr) / n
    p_true = ns / n
    p_yes = (h + fa) / n
    base = max(ns, nn) / n
    p_e = p_yes * p_true + (1 - p_yes) * (1 - p_true)
    out.update(
        accuracy=acc,
        outcome_rate=p_true,
        prediction_yes_rate=p_yes,
        mode_baseline=base,
        skill_over_mode=acc - base,
        skill_score=(acc - base) / (1 - base) if base < 1 else None,
        kappa=(acc - p_e) / (1 - p_e) if p_e < 1 else None,
    )
    if ns and nn:
        out["balanced_accuracy"] = 0.5 * (h / ns + cr / nn)
    d, c = sdt_loglinear(h, ns, fa, nn)
    out["dprime"], out["criterion"] = d, c
    return out


def auroc(
    scores: Sequence[float] | np.ndarray, labels: Sequence[bool] | np.ndarray
) -> float | None:
    """Area under the ROC curve by the Mann-Whitney statistic, ties counting one half.

    Parameters
    ----------
    scores
        Higher means "more likely positive".
    labels
        True for positives.

    Returns
    -------
    float or None
        ``None`` when there is no positive or no negative.

    Examples
    --------
    >>> auroc([0.1, 0.4, 0.35, 0.8], [False, False, True, True])
    0.75
    >>> auroc([0.5, 0.5], [False, True])
    0.5
    """
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    n1 = int(y.sum())
    n0 = y.size - n1
    if n1 == 0 or n0 == 0:
        return None
    ranks = rankdata(s)  # mid-ranks for ties
    u = float(ranks[y].sum()) - n1 * (n1 + 1) / 2.0
    return u / (n1 * n0)


def bin_edges(n_bins: int = DEFAULT_BINS) -> np.ndarray:
    """Equal-width bin edges over [0, 1]."""
    if n_bins < 1:
        raise ValueError("n_bins must be at least 1")
    return np.linspace(0.0, 1.0, n_bins + 1)


def calibration_curve(
    confidence: Sequence[float] | np.ndarray,
    correct: Sequence[bool] | np.ndarray,
    *,
    n_bins: int = DEFAULT_BINS,
) -> dict[str, Any]:
    """Binned calibration of stated confidence against observed accuracy.

    Parameters
    ----------
    confidence
        Stated probability that each prediction is right, in [0, 1].
    correct
        Whether each prediction was right.
    n_bins
        Number of equal-width bins over [0, 1].

    Returns
    -------
    dict
        ``n``, ``ece`` (of the first argument's bins), ``mean_confidence``, ``accuracy``,
        ``overconfidence``, ``bin_edges`` (``n_bins + 1`` values) and per bin, as lists of
        length ``n_bins``:
        ``bin_n``, ``bin_confidence`` (mean stated confidence) and ``bin_accuracy``
        (observed accuracy); ``None`` in empty bins.

    Examples
    --------
    >>> c = calibration_curve([0.9, 0.9, 0.6, 0.6], [True, False, True, True])
    >>> round(c["ece"], 3), c["bin_n"][5:], c["bin_accuracy"][6], c["bin_accuracy"][9]
    (0.4, [0, 2, 0, 0, 2], 1.0, 0.5)
    """
    q = np.asarray(confidence, dtype=float)
    a = np.asarray(correct, dtype=bool)
    if q.size and (np.nanmin(q) < 0 or np.nanmax(q) > 1):
        raise ValueError("confidence must lie in [0, 1]")
    edges = bin_edges(n_bins)
    # bin b is [b / n_bins, (b + 1) / n_bins); the tolerance keeps 0.6 in [0.6, 0.7)
    idx = np.clip(np.floor(q * n_bins + 1e-9).astype(int), 0, n_bins - 1)
    counts: list[int] = []
    confs: list[float | None] = []
    accs: list[float | None] = []
    ece = 0.0
    for b in range(n_bins):
        sel = idx == b
        nb = int(sel.sum())
        counts.append(nb)
        if nb:
            mc, acc = float(q[sel].mean()), float(a[sel].mean())
            ece += nb / q.size * abs(mc - acc)
            confs.append(mc)
            accs.append(acc)
        else:
            confs.append(None)
            accs.append(None)
    n = int(q.size)
    return {
        "n": n,
        "ece": ece if n else None,
        "mean_confidence": float(q.mean()) if n else None,
        "accuracy": float(a.mean()) if n else None,
        "overconfidence": float(q.mean() - a.mean()) if n else None,
        "bin_edges": edges.tolist(),
        "bin_n": counts,
        "bin_confidence": confs,
        "bin_accuracy": accs,
    }


def confidence_metrics(
    prediction: Sequence[bool] | np.ndarray,
    outcome: Sequence[bool] | np.ndarray,
    confidence: Sequence[float] | np.ndarray,
    *,
    n_bins: int = DEFAULT_BINS,
) -> dict[str, Any]:
    """Brier score, AUROCs and ECE of binary predictions with stated confidence.

    Parameters
    ----------
    prediction, outcome
        Booleans (predicted true; outcome true).
    confidence
        Stated probability that the prediction is right (``docs/analyses.md``).
    n_bins
        Bins of the calibration curve.

    Returns
    -------
    dict
        ``n_confidence``, ``brier``, ``brier_baseline``, ``auroc``, ``auroc_type2``,
        ``ece_prediction_confidence`` (and ``ece``, the same number), ``mean_confidence``,
        ``overconfidence``.

    Examples
    --------
    >>> m = confidence_metrics([True, False], [True, True], [0.9, 0.8])
    >>> round(m["brier"], 3), m["auroc_type2"]
    (0.325, 1.0)
    """
    yhat = np.asarray(prediction, dtype=bool)
    y = np.asarray(outcome, dtype=bool)
    q = np.asarray(confidence, dtype=float)
    n = int(q.size)
    if n == 0:
        keys = ("brier", "brier_baseline", "auroc", "auroc_type2", "ece",
                "ece_prediction_confidence", "mean_confidence", "overconfidence")
        return {"n_confidence": 0, **dict.fromkeys(keys)}
    correct = yhat == y
    s = np.where(yhat, q, 1.0 - q)
    base = y.mean()
    cal = calibration_curve(q, correct, n_bins=n_bins)
    return {
        "n_confidence": n,
        "brier": float(np.mean((q - correct) ** 2)),
        "brier_baseline": float(np.mean((base - y) ** 2)),
        "auroc": auroc(s, y),
        "auroc_type2": auroc(q, correct),
        "ece": cal["ece"],
        "ece_prediction_confidence": cal["ece"],
        "mean_confidence": cal["mean_confidence"],
        "overconfidence": cal["overconfidence"],
    }


def _binary_frame(records: pl.DataFrame) -> pl.DataFrame:
    """Readable self-predictions with boolean prediction/outcome (non-binary rows dropped)."""
    recs = self_predictions(records)
    if "confidence" not in recs.columns:
        recs = recs.with_columns(pl.lit(None, dtype=pl.Float64).alias("confidence"))
    return recs.filter(
        (pl.col("status") == "ok")
        & pl.col("correct").is_not_null()
        & pl.col("prediction").is_in(["true", "false"])
        & pl.col("outcome").is_in(["true", "false"])
    ).select(
        *CELL_KEY,
        (pl.col("prediction") == "true").alias("yhat"),
        (pl.col("outcome") == "true").alias("y"),
        pl.col("confidence").cast(pl.Float64),
    )


#: Why a cell with no readable prediction has no skill (``sdt_note``).
NOT_BINARY: Final = "not a binary cell: predictions or outcomes are not all true/false"


def unscored_note(n_total: int, n_not_asked: int, n_unanswered: int) -> str:
    """Why a cell without a readable self-prediction has nothing to score, from its counts.

    ``n_total`` counts the cell's self-predictions to score (readable or not); rows with
    nothing to score (status ``not_asked``, ``unanswered``) are counted apart.

    Examples
    --------
    >>> unscored_note(0, 40, 0)
    'no self-prediction to score: no prediction was asked (40 rows not_asked, by design)'
    >>> unscored_note(3, 0, 2)
    'no self-prediction to score: no readable prediction (3 unreadable); 2 rows unanswered (no outcome)'
    """
    parts = []
    if n_not_asked:
        parts.append(f"no prediction was asked ({n_not_asked} rows not_asked, by design)")
    if n_total:
        parts.append(f"no readable prediction ({n_total} unreadable)")
    if n_unanswered:
        parts.append(f"{n_unanswered} rows unanswered (no outcome)")
    return "no self-prediction to score: " + ("; ".join(parts) if parts else "no records")


def skill_from_cells(cells: pl.DataFrame) -> list[dict[str, Any]]:
    """Count-based skill metrics from the cells of :func:`selfmodel.records.cells.to_cells`.

    Parameters
    ----------
    cells
        One row per model x task with ``n``, ``k``, ``binary``, ``n_signal``, ``n_noise``,
        ``hits``, ``false_alarms``, ``mode_outcome_share``.

    Returns
    -------
    list of dict
        ``model``, ``task``, ``binary`` and the keys of :func:`binary_metrics`. Non-binary
        cells keep ``n``, ``accuracy`` and ``mode_baseline`` (from ``mode_outcome_share``)
        and ``None`` for the binary metrics. A cell without a readable self-prediction
        (``n`` 0: every row unreadable, not asked or unanswered) says so in ``sdt_note``
        (:func:`unscored_note`), never "not a binary cell". ``n_not_asked`` and
        ``n_unanswered`` count the rows with nothing to score.
    """
    rows = []
    for c in cells.sort(list(CELL_KEY)).iter_rows(named=True):
        binary = bool(c["binary"]) and c["n"] > 0
        if binary:
            h, fa = int(c["hits"]), int(c["false_alarms"])
            m = binary_metrics(h, int(c["n_signal"]) - h, fa, int(c["n_noise"]) - fa)
        else:
            m = binary_metrics(0, 0, 0, 0)
            m["sdt_note"] = NOT_BINARY if c["n"] else unscored_note(
                int(c["n_total"]), int(c.get("n_not_asked") or 0), int(c.get("n_unanswered") or 0))
            n = int(c["n"])
            m["n"] = n
            if n:
                acc = c["k"] / n
                base = _f(c["mode_outcome_share"])
                m["accuracy"], m["mode_baseline"] = acc, base
                if base is not None:
                    m["skill_over_mode"] = acc - base
                    m["skill_score"] = (acc - base) / (1 - base) if base < 1 else None
        rows.append({"model": c["model"], "task": c["task"], "binary": binary, **_clean(m),
                     "n_not_asked": int(c.get("n_not_asked") or 0),
                     "n_unanswered": int(c.get("n_unanswered") or 0)})
    return rows


def skill_table(records: pl.DataFrame, *, n_bins: int = DEFAULT_BINS) -> list[dict[str, Any]]:
    """Skill beyond base rates per model x task, from canonical records.

    Parameters
    ----------
    records
        Canonical records (``selfmodel.records.contract.RECORD_SCHEMA``); only self-predictions
        (``predictor`` null or equal to ``model``) count.
    n_bins
        Bins for the ECE.

    Returns
    -------
    list of dict
        One JSON-serialisable row per model x task (sorted): ``model``, ``task``,
        ``binary``, the count metrics of :func:`binary_metrics` and the confidence metrics
        of :func:`confidence_metrics` (``None`` without confidence or for non-binary
        cells).

    Examples
    --------
    >>> import polars as pl
    >>> r = pl.DataFrame({"model": ["a"] * 4, "task": ["t"] * 4, "predictor": ["a"] * 4,
    ...     "prediction": ["true", "true", "true", "false"],
    ...     "outcome": ["true", "true", "false", "false"],
    ...     "correct": [True, True, False, True], "status": ["ok"] * 4,
    ...     "confidence": [0.9, 0.8, 0.7, 0.6]})
    >>> row = skill_table(r)[0]
    >>> row["accuracy"], row["kappa"], row["auroc"]
    (0.75, 0.5, 1.0)
    """
    cells = to_cells(records)
    rows = skill_from_cells(cells)
    binary = _binary_frame(records).filter(pl.col("confidence").is_not_null())
    groups = {key: g for key, g in binary.group_by(list(CELL_KEY))}
    for row in rows:
        g = groups.get((row["model"], row["task"])) if row["binary"] else None
        if g is None:
            cm = confidence_metrics([], [], [], n_bins=n_bins)
        else:
            cm = confidence_metrics(
                g["yhat"].to_numpy(), g["y"].to_numpy(), g["confidence"].to_numpy(), n_bins=n_bins
            )
        row.update(_clean(cm))
    return rows


def confidence_calibration(records: pl.DataFrame, *, n_bins: int = DEFAULT_BINS) -> dict[str, Any]:
    """Confidence calibration: curves of stated confidence, per model x task and per model.

    Parameters
    ----------
    records
        Canonical records; readable binary self-predictions with a confidence are used.
    n_bins
        Number of equal-width bins over [0, 1].

    Returns
    -------
    dict
        ``semantics`` (what confidence is taken to mean), ``measure`` (what its ECE bins),
        ``binning``, ``bin_edges``, ``cells`` (list of ``{model, task, **calibration_curve,
        ece_prediction_confidence}``) and ``models`` (pooled over tasks, list of ``{model,
        ...}``); the curves share the top-level ``bin_edges``.
        Cells without confidence are absent.
    """
    frame = _binary_frame(records).filter(pl.col("confidence").is_not_null())

    def curve(g: pl.DataFrame) -> dict[str, Any]:
        correct = (g["yhat"] == g["y"]).to_numpy()
        c = calibration_curve(g["confidence"].to_numpy(), correct, n_bins=n_bins)
        del c["bin_edges"]
        c["ece_prediction_confidence"] = c["ece"]
        return c

    cells = [
        {"model": model, "task": task, **curve(g)}
        for (model, task), g in sorted(frame.group_by(list(CELL_KEY)), key=lambda kv: kv[0])
    ]
    models = [
        {"model": model, **curve(g)}
        for (model,), g in sorted(frame.group_by(["model"]), key=lambda kv: kv[0])
    ]
    return {
        "semantics": CONFIDENCE_SEMANTICS,
        "measure": ECE_PREDICTION_CONFIDENCE,
        "binning": f"{n_bins} equal-width bins over [0, 1]; last bin closed",
        "bin_edges": bin_edges(n_bins).tolist(),
        "cells": cells,
        "models": models,
    }
