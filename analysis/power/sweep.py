"""The power sweep: decisions per true slope, the minimum detectable slope, models against items."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from scipy.stats import norm

from selfmodel.common.paths import DEFAULT_SEED
from selfmodel.decisions.hypotheses import DecisionRule, decide
from selfmodel.power.approximate_fit import CellLayout, PosteriorGrid, mixture_draws, posterior_of
from selfmodel.power.design import (
    DEFAULT_SLOPES,
    GRID,
    N_DRAWS,
    OUTCOMES,
    TARGET_POWER,
    Design,
    Progress,
)
from selfmodel.power.simulator import base_draws, simulate_k
from selfmodel.records.contract import InputError

# --------------------------------------------------------------------------- power


class Ticker:
    """Progress over ``total`` fits: a rich bar, a callback, or nothing."""

    def __init__(self, progress: bool | Progress, total: int, label: str) -> None:
        self.total, self.done = total, 0
        self._bar: Any = None
        self._cb: Progress | None = None
        if callable(progress):
            self._cb = progress
        elif progress:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn("[dim]selfmodel[/dim] {task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._bar.start()
            self._task = self._bar.add_task(label, total=total)

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more done and show it."""
        self.done += n
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
        if self._cb is not None:
            self._cb(self.done, self.total)

    def close(self) -> None:
        """Stop the progress display."""
        if self._bar is not None:
            self._bar.stop()


def sweep_of(
    design: Design,
    slopes: Sequence[float],
    *,
    sims: int,
    seed: int,
    ticker: Ticker,
    grid: Mapping[str, int] | None = None,
    components: Sequence[Mapping[str, float]] | None = None,
) -> list[dict[str, Any]]:
    """Decisions per true slope over ``sims`` simulated data sets.

    ``components`` (optional, at least ``sims`` entries): the variance components of data
    set ``s`` are ``components[s]`` (``Design`` field names, e.g. draws from a fit's
    posterior) instead of the design's fixed values.
    """
    if components is not None and len(components) < sims:
        raise ValueError(f"{len(components)} component draws for {sims} simulations")
    layout = CellLayout.from_design(design)
    g = PosteriorGrid.make(len(layout.tasks), grid)
    rule = design.rule
    n_models = len(layout.models)
    counts = [dict.fromkeys(OUTCOMES, 0) for _ in slopes]
    means = np.zeros((len(slopes), sims))
    sds = np.zeros((len(slopes), sims))
    covered = np.zeros((len(slopes), sims), dtype=bool)
    for s in range(sims):
        base = base_draws(seed, s, layout, N_DRAWS)
        comp: dict[str, Any] = dict(components[s]) if components is not None else {}
        design_s = replace(design, **comp) if comp else design
        for j, slope in enumerate(slopes):
            k = simulate_k(layout, design_s, slope, base)
            wts, mu, var, _ = posterior_of(layout, g, k)
            d = decide(
                mixture_draws(wts, mu, var, base.u_draw, base.z_draw), rule, n_models=n_models
            )
            counts[j][d["decision"]] = counts[j].get(d["decision"], 0) + 1
            means[j, s], sds[j, s] = d["mean"], d["sd"]
            covered[j, s] = d["hdi_low"] <= slope <= d["hdi_high"]
            ticker.advance()
    out = []
    for j, slope in enumerate(slopes):
        row: dict[str, Any] = {"slope": float(slope), "sims": sims}
        for o in OUTCOMES:
            p = counts[j][o] / sims
            row[f"p_{o}"] = p
            row[f"se_{o}"] = math.sqrt(p * (1 - p) / sims)
        row["mean_estimate"] = float(means[j].mean())
        row["mean_posterior_sd"] = float(sds[j].mean())
        row["hdi_coverage"] = float(covered[j].mean())
        out.append(row)
    return out


def mde_of(
    results: Sequence[Mapping[str, Any]], target: float = TARGET_POWER
) -> tuple[float | None, float | None]:
    """Smallest swept slope > 0 with P(improves) >= target, and a linear interpolation of it.

    The interpolation uses the swept slope just below (``None`` when there is none, or when
    it already reaches the target).
    """
    rows = sorted(results, key=lambda r: r["slope"])
    for i, r in enumerate(rows):
        if r["slope"] > 0 and r["p_improves"] >= target:
            interp = None
            if i > 0 and rows[i - 1]["p_improves"] < target:
                lo, hi = rows[i - 1], r
                f = (target - lo["p_improves"]) / (hi["p_improves"] - lo["p_improves"])
                interp = lo["slope"] + f * (hi["slope"] - lo["slope"])
            return r["slope"], interp
    return None, None


def normal_theory_mde(
    posterior_sd: float, rule: DecisionRule, power: float = TARGET_POWER
) -> float:
    r"""Slope at which ``improves`` has probability ``power`` if the estimate is normal.

    ``improves`` needs the HDI above the ROPE: estimate :math:`> r + z_{(1+h)/2}\,s`; with the
    estimate :math:`\sim N(\beta, s^2)` that has probability ``power`` at
    :math:`\beta = r + (z_{(1+h)/2} + z_{power})\,s`. A quick guide: the simulation, not this,
    is the answer (posterior sds of hierarchical slopes are not constant across data sets).

    Examples
    --------
    >>> round(normal_theory_mde(0.07, DecisionRule()), 3)
    0.291
    """
    return float(rule.rope + (norm.ppf(0.5 + rule.hdi_prob / 2) + norm.ppf(power)) * posterior_sd)


def sweep_slope(power: Mapping[str, Any]) -> float:
    """The slope for :func:`models_vs_items`: where this design has 50% power.

    There the power curve is steepest, so a change of design shows most. Falls back to the
    minimum detectable slope, then to the largest swept slope.
    """
    rows = sorted(power["results"], key=lambda r: r["slope"])
    for lo, hi in zip(rows, rows[1:], strict=False):
        if lo["p_improves"] < 0.5 <= hi["p_improves"]:
            f = (0.5 - lo["p_improves"]) / (hi["p_improves"] - lo["p_improves"])
            return float(lo["slope"] + f * (hi["slope"] - lo["slope"]))
    return float(power.get("mde_80") or rows[-1]["slope"])


def _method(grid: Mapping[str, int] | None) -> dict[str, Any]:
    return {
        "simulation": "cell-level binomial draws from the scale model's generative form; items and "
        "repeats enter through the effective n (Kish design effect); common random "
        "numbers across slopes",
        "fit": "empirical-logit Gaussian approximation of the scale model, fixed effects "
        "integrated exactly, variance components on a grid at prior mid-quantiles (selfmodel.power)",
        "grid": {**GRID, **(grid or {})},
        "posterior_draws": N_DRAWS,
        "priors": "selfmodel.models.scale.DEFAULT_PRIORS",
        "decision": "selfmodel.decisions.hypotheses.decide",
        "validation": "validation/power_validation.py -> validation/results/power_validation.json",
    }


def run_power(
    design: Design,
    *,
    slopes: Sequence[float] = DEFAULT_SLOPES,
    sims: int = 500,
    seed: int = DEFAULT_SEED,
    progress: bool | Progress = False,
    grid: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Probability of each decision at each true slope, and the minimum detectable slope.

    Parameters
    ----------
    design
        The study design (:func:`load_design`, :func:`design_from_template`,
        :func:`default_design`).
    slopes
        True slopes (logits per unit of the scale variable).
    sims
        Simulated data sets per slope.
    seed
        Seed; the same seed gives the same answer.
    progress
        ``True`` for a progress bar on stderr, a callable ``(done, total)``, or ``False``.
    grid
        Override grid sizes of the approximate fit (keys of :data:`GRID`).

    Returns
    -------
    dict
        ``design``, ``rule``, ``method``, ``seed``, ``sims``, ``results`` (one entry per
        slope, sorted: ``slope``, ``p_improves``, ``p_no_credible_effect``,
        ``p_practically_null``, ``p_worsens``, ``se_*`` (binomial Monte Carlo standard
        errors), ``sims``, ``mean_estimate``, ``mean_posterior_sd``, ``hdi_coverage``),
        ``mde_80`` (smallest swept slope with P(improves) >= 0.8, or ``None``) and
        ``mde_80_interpolated`` (linear interpolation between the bracketing slopes).

    Examples
    --------
    >>> p = run_power(default_design(), slopes=[0.0, 0.5], sims=20, seed=1)
    >>> [r["slope"] for r in p["results"]], p["results"][1]["p_improves"] > 0.5
    ([0.0, 0.5], True)
    """
    if sims < 1:
        raise InputError(f"--sims must be at least 1 (got {sims}).")
    slopes = sorted({float(s) for s in slopes})
    if not slopes or not all(math.isfinite(s) for s in slopes):
        raise InputError("give at least one finite slope (--slopes 0 0.2 0.4).")
    if len(design.models) < design.rule.min_models:
        raise InputError(
            f"the design has {len(design.models)} model(s); the decision rule needs at least "
            f"{design.rule.min_models} to estimate a slope. Add models."
        )
    ticker = Ticker(
        progress, sims * len(slopes), f"power: {len(slopes)} slopes x {sims} simulations"
    )
    try:
        results = sweep_of(design, slopes, sims=sims, seed=seed, ticker=ticker, grid=grid)
    finally:
        ticker.close()
    mde, mde_i = mde_of(results)
    return {
        "design": design.as_dict(),
        "rule": design.rule.as_dict(),
        "units": design.units,
        "method": _method(grid),
        "seed": seed,
        "sims": sims,
        "target_power": TARGET_POWER,
        "results": results,
        "mde_80": mde,
        "mde_80_interpolated": mde_i,
    }


def _with_models_per_family(design: Design, per_family: int) -> Design:
    """The design with ``per_family`` models in every family.

    They are spread evenly in log size over the family's size range (the design-wide range
    for a family with a single size).
    """
    xs_all = [x for *_, x in design.models]
    models = []
    for fam in design.families:
        xs = [x for _, f, x in design.models if f == fam]
        lo, hi = (min(xs), max(xs)) if len(xs) > 1 else (min(xs_all), max(xs_all))
        for i, x in enumerate(np.linspace(lo, hi, per_family)):
            models.append((f"{fam}-{i + 1}", fam, float(x)))
    return replace(design, models=tuple(models))


def models_vs_items(
    design: Design,
    *,
    slope: float,
    models_per_family: Sequence[int] = (2, 3, 4, 6),
    items: Sequence[int] = (50, 150, 500, 1500),
    sims: int = 200,
    seed: int = DEFAULT_SEED,
    progress: bool | Progress = False,
    grid: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Power at one true slope as models per family and items per task change.

    Every family gets ``m`` models spread evenly (in log size) over its size range, and
    every task ``i`` items; everything else stays as in ``design``.

    Returns
    -------
    dict
        ``slope``, ``models_per_family``, ``items``, ``sims`` and ``cells``: one entry per
        combination with ``models_per_family``, ``items``, ``n_models``, ``p_improves``
        (at ``slope``), ``se_improves``, ``mean_posterior_sd`` and ``mde_80_normal_theory``
        (:func:`normal_theory_mde` of that sd).
    """
    total = len(models_per_family) * len(items) * sims
    ticker = Ticker(
        progress, total, f"models vs items: {len(models_per_family) * len(items)} designs x {sims}"
    )
    cells = []
    try:
        for m in models_per_family:
            dm = _with_models_per_family(design, int(m))
            for i in items:
                di = replace(dm, tasks=tuple(replace(t, items=int(i)) for t in dm.tasks))
                r = sweep_of(di, [slope], sims=sims, seed=seed, ticker=ticker, grid=grid)[0]
                cells.append(
                    {
                        "models_per_family": int(m),
                        "items": int(i),
                        "n_models": len(di.models),
                        "p_improves": r["p_improves"],
                        "se_improves": r["se_improves"],
                        "mean_posterior_sd": r["mean_posterior_sd"],
                        "mde_80_normal_theory": normal_theory_mde(r["mean_posterior_sd"], di.rule),
                    }
                )
    finally:
        ticker.close()
    return {
        "slope": float(slope),
        "models_per_family": [int(m) for m in models_per_family],
        "items": [int(i) for i in items],
        "sims": sims,
        "cells": cells,
    }
