"""Independent generators of scale-study cells with known truth (issue 28.6).

Written apart from the models (``models/scale.py``, ``models/sdt.py``), from the package's
simulator (``selfmodel.records.simulate``) and from the model-form null generator of
``validation/pipeline_operating_characteristics.py``, and not sharing their assumptions. Four generators:

:func:`heavy_tailed` (the non-null arms: coverage at a known slope)
    cells whose true logit accuracy (``accuracy``) or d' and criterion (``dprime``,
    ``criterion``) is ``a_t + slope * x_m + u_f + v_m + w_mt``: the models' linear predictor,
    so the slope means exactly what the decided slope means, but with effects the models do
    not assume: family effects from a Student t with 3 degrees of freedom, model effects from a
    centred gamma (skewed), no zero-sum constraint, and cell effects from a Laplace law.
    ``slope`` is the true slope in every task, so the average over tasks is ``slope`` too.

:func:`within_between` (the Mundlak arms: a within-family and a between-family slope)
    accuracy cells as :func:`heavy_tailed`, but the size term is split: ``within`` times a
    model's distance from its family's mean size, plus ``between`` times the family's mean
    size (centred over the models). With ``within == between`` it is :func:`heavy_tailed`'s
    single slope; with ``within = 0`` a scale "effect" comes only from differences between
    families, the confound ``models/within_between.py`` is fitted to separate.

:func:`level_accuracy` (the confirmatory family's coverage arm: both members' truths set)
    signal-detection cells whose d' is ``a_t + slope * x_m`` plus bounded, non-normal family,
    model (skewed) and cell effects (so every d' is positive) while every cell's expected accuracy is its
    task's level ``A_t``: each cell's criterion is solved for, given its d' and its realised
    base rate, so that ``E[hits + correct rejections] = n * A_t``. So the d' slope is ``slope``
    and the accuracy slope is exactly 0, whatever the link; the criterion is whatever keeps
    accuracy level (not linear in size: neither model's form).

:func:`clustered` (the misspecified arm, under the null)
    records, not cells: every task has one pool of items that every model answers, in
    clusters of 3-5 items that share a difficulty shift (as SEB's word association, where one
    cue yields several items); each model x task x cluster gets its own shift
    (overdispersion: a cell's count varies more than binomially, and its items are not
    independent); item difficulties are beta-distributed; for the signal-detection arms the
    behaviour is a per-item Bernoulli and the prediction a logistic (not normal) evidence
    readout with a per-cluster criterion shift. Nothing depends on the model's size, so the
    true slope of every decided quantity is 0, whatever the link.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl
from scipy.optimize import brentq
from scipy.special import expit
from scipy.stats import norm

#: the scales of the effects (logit, d' or criterion units), as in the model-form generator
SCALE = {"family": 0.3, "model": 0.25, "cell": 0.15}


def _x(models: Sequence[tuple[str, str, float]]) -> dict[str, float]:
    centre = float(np.mean([x for _, _, x in models]))
    return {m: x - centre for m, _, x in models}


def _effects(models: Sequence[tuple[str, str, float]], rng: np.random.Generator
             ) -> tuple[dict[str, float], dict[str, float]]:
    """Family effects from t(3), model effects from a centred gamma (skewed); no zero sum."""
    fams = sorted({f for _, f, _ in models})
    # t(3) has sd sqrt(3): rescale so the spread matches SCALE["family"]
    u = dict(zip(fams, SCALE["family"] * rng.standard_t(3, len(fams)) / np.sqrt(3), strict=True))
    shape = 2.0  # gamma(2) centred and scaled to sd 1: skewness sqrt(2)
    v = {m: float(SCALE["model"] * (rng.gamma(shape) - shape) / np.sqrt(shape)) for m, _, _ in models}
    return u, v


def _laplace(rng: np.random.Generator, sd: float) -> float:
    return float(rng.laplace(0.0, sd / np.sqrt(2)))


def _accuracy_cells(models: Sequence[tuple[str, str, float]], cells: Sequence[tuple[str, str, int]],
                    size_term: dict[str, float], rng: np.random.Generator) -> pl.DataFrame:
    """Binomial cells with logit ``a_t + size_term[m] + u_f + v_m + w_mt`` (heavy-tailed effects)."""
    tasks = sorted({t for _, t, _ in cells})
    fam_of = {m: f for m, f, _ in models}
    x = _x(models)
    alpha = dict(zip(tasks, rng.uniform(-0.4, 1.0, len(tasks)), strict=True))
    u, v = _effects(models, rng)
    rows = []
    for m, t, n in cells:
        eta = alpha[t] + size_term[m] + u[fam_of[m]] + v[m] + _laplace(rng, SCALE["cell"])
        rows.append({"model": m, "family": fam_of[m], "task": t, "x": x[m], "n": n,
                     "k": int(rng.binomial(n, expit(eta)))})
    return pl.DataFrame(rows)


def heavy_tailed(models: Sequence[tuple[str, str, float]], cells: Sequence[tuple[str, str, int]],
                 effect: str, slope: float, seed: int) -> pl.DataFrame:
    """Cells of one data set with true slope ``slope`` (per unit of centred x) in every task."""
    rng = np.random.default_rng([seed, 286])
    tasks = sorted({t for _, t, _ in cells})
    fam_of = {m: f for m, f, _ in models}
    x = _x(models)
    if effect == "accuracy":
        return _accuracy_cells(models, cells, {m: slope * x[m] for m in x}, rng)
    rows = []
    a_d = dict(zip(tasks, rng.uniform(0.8, 2.2, len(tasks)), strict=True))
    a_c = dict(zip(tasks, rng.uniform(-0.5, 0.5, len(tasks)), strict=True))
    ud, vd = _effects(models, rng)
    uc, vc = _effects(models, rng)
    for m, t, n in cells:
        dp = a_d[t] + slope * x[m] + ud[fam_of[m]] + vd[m] + _laplace(rng, SCALE["cell"])
        c = a_c[t] + slope * x[m] + uc[fam_of[m]] + vc[m] + _laplace(rng, SCALE["cell"])
        # the behaviour's base rate differs by cell (not half and half)
        n_s = int(rng.binomial(n, rng.uniform(0.3, 0.7)))
        n_n = n - n_s
        rows.append({"model": m, "family": fam_of[m], "task": t, "x": x[m],
                     "n_signal": n_s, "n_noise": n_n,
                     "hits": int(rng.binomial(n_s, norm.cdf(dp / 2 - c))),
                     "false_alarms": int(rng.binomial(n_n, norm.cdf(-dp / 2 - c)))})
    return pl.DataFrame(rows)


def _accuracy_at(c: Any, dprime: float, share_signal: float) -> Any:
    """Expected accuracy of an equal-variance SDT reader at criterion ``c`` (a number or an
    array of them): hits plus correct rejections."""
    return share_signal * norm.cdf(dprime / 2 - c) + (1 - share_signal) * norm.cdf(dprime / 2 + c)


#: the criterion grid a cell's best accuracy is searched on, and the root brackets' far ends
_C_GRID = np.linspace(-8.0, 8.0, 1601)


def level_criterion(dprime: float, share_signal: float, level: float, high: bool) -> float:
    """The criterion at which a reader of sensitivity ``dprime`` on a share ``share_signal`` of
    signal items is right with probability ``level``: the root above the accuracy-maximising
    criterion when ``high`` (and one exists there), else the one below.

    >>> c = level_criterion(1.0, 0.4, 0.62, True)
    >>> float(round(_accuracy_at(c, 1.0, 0.4), 6))
    0.62
    """
    best = float(_C_GRID[int(np.argmax(_accuracy_at(_C_GRID, dprime, share_signal)))])
    if _accuracy_at(best, dprime, share_signal) < level:
        raise ValueError(f"accuracy {level} is out of reach at d' {dprime:.3f}, signal share {share_signal:.3f}")
    sides = [(best, float(_C_GRID[-1])), (float(_C_GRID[0]), best)]
    for lo, hi in (sides if high else sides[::-1]):
        f_lo, f_hi = (_accuracy_at(lo, dprime, share_signal) - level, _accuracy_at(hi, dprime, share_signal) - level)
        if f_lo * f_hi <= 0:
            return float(brentq(lambda c: _accuracy_at(c, dprime, share_signal) - level, lo, hi, xtol=1e-10))
    raise ValueError(f"no criterion gives accuracy {level} at d' {dprime:.3f}")  # pragma: no cover


def level_accuracy(models: Sequence[tuple[str, str, float]], cells: Sequence[tuple[str, str, int]],
                   slope: float, seed: int) -> pl.DataFrame:
    """SDT cells with d' slope ``slope`` and level accuracy within each task (module docstring).

    Each task's level is 60% of the way from 0.5 to the lowest best accuracy of its cells
    (every cell can reach it); each task's criteria take the root on one side of the best
    criterion, the side drawn per task.
    """
    rng = np.random.default_rng([seed, 289])
    tasks = sorted({t for _, t, _ in cells})
    fam_of = {m: f for m, f, _ in models}
    x = _x(models)
    a_d = dict(zip(tasks, rng.uniform(1.4, 2.2, len(tasks)), strict=True))
    high = dict(zip(tasks, rng.random(len(tasks)) < 0.5, strict=True))
    # bounded effects (uniform family and cell effects, a skewed centred beta per model), so
    # that every d' stays positive: a level accuracy above chance is then in every cell's reach
    ud = {f: float(rng.uniform(-0.35, 0.35)) for f in sorted(set(fam_of.values()))}
    vd = {m: float(rng.beta(2.0, 5.0) - 2.0 / 7.0) for m, _, _ in models}
    drawn = []
    for m, t, n in cells:
        dp = a_d[t] + slope * x[m] + ud[fam_of[m]] + vd[m] + float(rng.uniform(-0.2, 0.2))
        if dp <= 0:
            raise ValueError(f"d' {dp:.3f} <= 0 in cell {m} x {t}: slope {slope} is too steep for this design")
        n_s = int(rng.binomial(n, rng.uniform(0.3, 0.7)))
        drawn.append((m, t, n, dp, n_s))
    best = {t: min(float(np.max(_accuracy_at(_C_GRID, dp, n_s / n))) for m, tt, n, dp, n_s in drawn if tt == t)
            for t in tasks}
    level = {t: 0.5 + 0.6 * (best[t] - 0.5) for t in tasks}
    rows = []
    for m, t, n, dp, n_s in drawn:
        c = level_criterion(dp, n_s / n, level[t], bool(high[t]))
        rows.append({"model": m, "family": fam_of[m], "task": t, "x": x[m],
                     "n_signal": n_s, "n_noise": n - n_s,
                     "hits": int(rng.binomial(n_s, norm.cdf(dp / 2 - c))),
                     "false_alarms": int(rng.binomial(n - n_s, norm.cdf(-dp / 2 - c)))})
    return pl.DataFrame(rows)


def within_between(models: Sequence[tuple[str, str, float]], cells: Sequence[tuple[str, str, int]],
                   within: float, between: float, seed: int) -> pl.DataFrame:
    """Accuracy cells of one data set with true within- and between-family slopes (module docstring)."""
    rng = np.random.default_rng([seed, 288])
    fam_of = {m: f for m, f, _ in models}
    x = _x(models)
    fam_mean = {f: float(np.mean([x[m] for m, ff, _ in models if ff == f])) for f in set(fam_of.values())}
    size_term = {m: within * (x[m] - fam_mean[fam_of[m]]) + between * fam_mean[fam_of[m]] for m in x}
    return _accuracy_cells(models, cells, size_term, rng)


def cluster_index(n: int, rng: np.random.Generator) -> np.ndarray:
    """The cluster of each of ``n`` items, in clusters of 3-5 items."""
    out: list[int] = []
    k = 0
    while len(out) < n:
        out.extend([k] * int(rng.integers(3, 6)))
        k += 1
    return np.asarray(out[:n])


#: sd of a cluster's shared difficulty shift, and of a model x task x cluster shift (logits)
CLUSTER_SD, CLUSTER_CELL_SD = 0.8, 0.6


def clustered(models: Sequence[tuple[str, str, float]], cells: Sequence[tuple[str, str, int]],
              effect: str, seed: int) -> pl.DataFrame:
    """Cells of one null data set built from clustered, overdispersed records (module docstring)."""
    rng = np.random.default_rng([seed, 287])
    fam_of = {m: f for m, f, _ in models}
    x = _x(models)
    tasks = sorted({t for _, t, _ in cells})
    n_items = {t: max(n for _, tt, n in cells if tt == t) for t in tasks}
    pool = {}
    for t in tasks:
        cl = cluster_index(n_items[t], rng)
        shift = rng.normal(0.0, CLUSTER_SD, int(cl.max()) + 1)[cl]
        difficulty = np.log(p := np.clip(rng.beta(4.0, 2.0, n_items[t]), 0.02, 0.98)) - np.log1p(-p)
        pool[t] = (cl, difficulty + shift, rng.beta(2.0, 2.0, n_items[t]))
    ability = {t: _effects(models, rng) for t in tasks}
    criterion = {t: _effects(models, rng) for t in tasks}
    rows = []
    for m, t, n in cells:
        cl, eta_item, base_rate = pool[t]
        items = rng.choice(n_items[t], size=n, replace=False) if n < n_items[t] else np.arange(n)
        cl, eta_item, base_rate = cl[items], eta_item[items], base_rate[items]
        k_cl = int(cl.max()) + 1
        u, v = ability[t]
        a = u[fam_of[m]] + v[m] + rng.normal(0.0, CLUSTER_CELL_SD, k_cl)[cl]
        row = {"model": m, "family": fam_of[m], "task": t, "x": x[m]}
        if effect == "accuracy":
            right = rng.random(n) < expit(eta_item + a)
            rows.append(row | {"n": n, "k": int(right.sum())})
            continue
        # the behaviour happens per item; the prediction reads a logistic evidence whose
        # separation grows with the item's ease, against a criterion shifted per cluster
        uc, vc = criterion[t]
        behaviour = rng.random(n) < base_rate
        separation = 1.2 + 0.4 * np.tanh(eta_item + a)
        evidence = np.where(behaviour, separation / 2, -separation / 2) + rng.logistic(0.0, 0.55, n)
        crit = uc[fam_of[m]] + vc[m] + rng.normal(0.0, CLUSTER_CELL_SD / 2, k_cl)[cl]
        says_yes = evidence > crit
        rows.append(row | {"n_signal": int(behaviour.sum()), "n_noise": int((~behaviour).sum()),
                           "hits": int((says_yes & behaviour).sum()),
                           "false_alarms": int((says_yes & ~behaviour).sum())})
    return pl.DataFrame(rows)
