r"""Power for the sensitivity (d') slope of the signal-detection model (``models/sdt.py``).

The design is the fitted one: the signal-detection fit's cells (model x task, with their
signal and noise counts), the task d' and criterion at their posterior means (and each
task's criterion slope), and variance components either at their posterior means or, per
simulated data set, drawn from the fit's posterior (:mod:`selfmodel.power.posterior_draws`).

Data sets are simulated from the signal-detection model and each is fitted by the
approximate fit of the accuracy power, on log-linear corrected d' (Hautus 1995); the
generative model and the approximation: ``docs/power.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl
from scipy.stats import binom, norm

from selfmodel.analyses.skill import sdt_arrays
from selfmodel.common import arviz_ops
from selfmodel.decisions.hypotheses import DecisionRule, decide
from selfmodel.models.sdt import DEFAULT_PRIORS as SDT_PRIORS
from selfmodel.power.approximate_fit import CellLayout, PosteriorGrid, grid_posterior, mixture_draws
from selfmodel.power.design import N_DRAWS, OUTCOMES, TARGET_POWER
from selfmodel.power.posterior_draws import summarise_draws
from selfmodel.power.sweep import mde_of, normal_theory_mde


@dataclass(frozen=True)
class DprimeDesign:
    """Cells, task parameters and variance components of a d' power simulation."""

    cells: pl.DataFrame  # model, family, task, x (centred), n_signal, n_noise
    alpha_dprime: Mapping[str, float]
    alpha_criterion: Mapping[str, float]
    criterion_slope: Mapping[str, float]
    sigma_dprime_family: float = 0.1
    sigma_dprime_model: float = 0.1
    sigma_dprime_cell: float = 0.1
    sigma_criterion_family: float = 0.1
    sigma_criterion_model: float = 0.1
    sigma_criterion_cell: float = 0.1
    sigma_task_slope: float = 0.0
    rule: DecisionRule = field(default_factory=DecisionRule)


#: The signal-detection model's standard deviations (``DprimeDesign`` fields of the same names).
SDT_PRIOR_SIGMAS = tuple(f"sigma_{s}_{lv}" for s in ("dprime", "criterion") for lv in ("family", "model", "cell"))


def _prior() -> dict[str, float]:
    """The d' side's prior scales of ``models/sdt.py`` in the grid's names."""
    return {"alpha": SDT_PRIORS["alpha_dprime"][1]["sigma"],
            "slope_task": SDT_PRIORS["dprime_slope_task"][1]["sigma"],
            "sigma_family": SDT_PRIORS["sigma_dprime_family"][1]["sigma"],
            "sigma_model": SDT_PRIORS["sigma_dprime_model"][1]["sigma"],
            "sigma_cell": SDT_PRIORS["sigma_dprime_cell"][1]["sigma"]}


def design_from_sdt_fit(idata: Any, data: pl.DataFrame, rule: DecisionRule) -> DprimeDesign:
    """The fitted design: cells with both outcomes, task parameters and components at posterior means."""
    post = arviz_ops.posterior(idata)
    cells = data.filter((pl.col("n_signal") > 0) & (pl.col("n_noise") > 0)).select(
        "model", "family", "task", "x", "n_signal", "n_noise")
    centre = float(np.mean(cells.unique("model")["x"].to_numpy()))
    cells = cells.with_columns(pl.col("x") - centre)

    def by_task(name: str) -> dict[str, float]:
        da = post[name]
        return {str(t): float(da.sel(task=t).mean()) for t in da["task"].values}

    sig = {k: float(post[k].mean()) for k in SDT_PRIOR_SIGMAS if k in post}
    slopes = post["dprime_slope_task"]
    spread = float(slopes.std("task", ddof=1).mean()) if slopes.sizes["task"] > 1 else 0.0
    return DprimeDesign(cells=cells, alpha_dprime=by_task("alpha_dprime"),
                        alpha_criterion=by_task("alpha_criterion"),
                        criterion_slope=by_task("criterion_slope_task"),
                        sigma_task_slope=float(spread), rule=rule, **sig)


@dataclass
class _DLayout:
    layout: CellLayout
    s: np.ndarray
    n: np.ndarray
    tasks: list[str]


def _layout(design: DprimeDesign) -> _DLayout:
    c = design.cells.sort("family", "model", "task")
    families = list(dict.fromkeys(c["family"].to_list()))
    models = list(dict.fromkeys(c["model"].to_list()))
    tasks = sorted(set(c["task"].to_list()))
    fam_of = dict(zip(c["model"].to_list(), c["family"].to_list(), strict=True))
    lay = CellLayout(models=models, families=families, tasks=tasks,
                  cell_model=np.array([models.index(m) for m in c["model"].to_list()]),
                  cell_task=np.array([tasks.index(t) for t in c["task"].to_list()]),
                  model_family=np.array([families.index(fam_of[m]) for m in models]),
                  x=c["x"].to_numpy().astype(float),
                  n=(c["n_signal"] + c["n_noise"]).to_numpy().astype(np.int64))
    return _DLayout(lay, c["n_signal"].to_numpy().astype(float), c["n_noise"].to_numpy().astype(float), tasks)


def simulate_sdt_counts(design: DprimeDesign, slope: float, *, seed: int, sim: int,
                        dl: _DLayout | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Hits and false alarms of every cell (sorted by family, model, task) of one data set."""
    dl = dl or _layout(design)
    lay = dl.layout
    rng = np.random.default_rng([seed, sim, 7])
    n_tasks, n_families, n_models, n_cells = len(dl.tasks), len(lay.families), len(lay.models), lay.n_cells
    z = {k: rng.standard_normal(size) for k, size in
         (("df", n_families), ("dm", n_models), ("dc", n_cells), ("cf", n_families), ("cm", n_models),
          ("cc", n_cells), ("t", n_tasks))}
    u_hit, u_fa = rng.random(n_cells), rng.random(n_cells)
    t, m = lay.cell_task, lay.cell_model
    fam = lay.model_family[m]
    delta = design.sigma_task_slope * (z["t"] - z["t"].mean()) if n_tasks > 1 else np.zeros(n_tasks)
    a_d = np.array([design.alpha_dprime[k] for k in dl.tasks])
    a_c = np.array([design.alpha_criterion[k] for k in dl.tasks])
    b_c = np.array([design.criterion_slope.get(k, 0.0) for k in dl.tasks])
    d = (a_d[t] + (slope + delta[t]) * lay.x + design.sigma_dprime_family * z["df"][fam]
         + design.sigma_dprime_model * z["dm"][m] + design.sigma_dprime_cell * z["dc"])
    c = (a_c[t] + b_c[t] * lay.x + design.sigma_criterion_family * z["cf"][fam]
         + design.sigma_criterion_model * z["cm"][m] + design.sigma_criterion_cell * z["cc"])
    hits = binom.ppf(u_hit, dl.s, norm.cdf(d / 2 - c))
    fas = binom.ppf(u_fa, dl.n, norm.cdf(-d / 2 - c))
    return np.nan_to_num(hits).astype(float), np.nan_to_num(fas).astype(float)


def dprime_estimates(dl: _DLayout, hits: np.ndarray, fas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's corrected d' and its variance at the task's pooled rates (``docs/power.md``).

    d' is ``selfmodel.analyses.skill.sdt_arrays``: a simulated constant responder enters at d' = 0
    (the SDT fit would leave such a cell out; they are rare at the fitted rates).
    """
    y = sdt_arrays(hits, dl.s, fas, dl.n)[0]
    t = dl.layout.cell_task
    s2 = np.empty_like(y)
    for j in range(len(dl.tasks)):
        sel = t == j
        hb = (hits[sel].sum() + 0.5) / (dl.s[sel].sum() + 1.0)
        fb = (fas[sel].sum() + 0.5) / (dl.n[sel].sum() + 1.0)
        s2[sel] = (hb * (1 - hb) / (dl.s[sel] * norm.pdf(norm.ppf(hb)) ** 2)
                   + fb * (1 - fb) / (dl.n[sel] * norm.pdf(norm.ppf(fb)) ** 2))
    return y, s2


def sweep_dprime(design: DprimeDesign, slopes: Sequence[float], *, sims: int, seed: int,
                 components: Sequence[Mapping[str, float]] | None = None) -> list[dict[str, Any]]:
    """Decisions on the d' slope per true slope, as :func:`selfmodel.power.sweep._sweep` for accuracy."""
    dl = _layout(design)
    g = PosteriorGrid.make(len(dl.tasks), prior=_prior())
    mu0 = SDT_PRIORS["alpha_dprime"][1]["mu"]  # the grid's intercept prior is centred at 0
    n_models = len(dl.layout.models)
    counts = [dict.fromkeys(OUTCOMES, 0) for _ in slopes]
    stats = np.zeros((3, len(slopes), sims))
    for s in range(sims):
        comp: dict[str, Any] = dict(components[s]) if components is not None else {}
        d_s = replace(design, **comp) if comp else design
        rng = np.random.default_rng([seed, s, 8])
        u, zd = rng.random(N_DRAWS), rng.standard_normal(N_DRAWS)
        for j, slope in enumerate(slopes):
            hits, fas = simulate_sdt_counts(d_s, slope, seed=seed, sim=s, dl=dl)
            y, s2 = dprime_estimates(dl, hits, fas)
            wts, mu, var = grid_posterior(dl.layout, g, y - mu0, s2)
            r = decide(mixture_draws(wts, mu, var, u, zd), design.rule, n_models=n_models)
            counts[j][r["decision"]] = counts[j].get(r["decision"], 0) + 1
            stats[:, j, s] = r["mean"], r["sd"], float(r["hdi_low"] <= slope <= r["hdi_high"])
    rows = []
    for j, slope in enumerate(slopes):
        row: dict[str, Any] = {"slope": float(slope), "sims": sims}
        for o in OUTCOMES:
            p = counts[j][o] / sims
            row[f"p_{o}"], row[f"se_{o}"] = p, float(np.sqrt(p * (1 - p) / sims))
        row["mean_estimate"], row["mean_posterior_sd"], row["hdi_coverage"] = (
            float(stats[0, j].mean()), float(stats[1, j].mean()), float(stats[2, j].mean()))
        rows.append(row)
    return rows


def dprime_mde(design: DprimeDesign, *, sims: int = 100, seed: int,
               components: Sequence[Mapping[str, float]] | None = None) -> dict[str, Any]:
    """The d' slope found 'improves' with 80% power (pilot, normal theory, then a simulated curve)."""
    pilot = sweep_dprime(design, [0.0], sims=max(20, sims // 3), seed=seed, components=components)[0]
    normal = normal_theory_mde(pilot["mean_posterior_sd"], design.rule)
    slopes = [round(normal * f, 4) for f in (0.6, 0.8, 0.9, 1.0, 1.15, 1.4)]
    curve = sweep_dprime(design, slopes, sims=sims, seed=seed, components=components)
    grid_mde, interp = mde_of(curve)
    keep = ("slope", "p_improves", "se_improves", "p_credibly_positive", "p_no_credible_effect",
            "p_practically_null", "mean_posterior_sd", "mean_estimate", "hdi_coverage")
    return {
        "target_power": TARGET_POWER,
        "mde_80": interp if interp is not None else grid_mde,
        "mde_80_normal_theory": normal,
        "expected_posterior_sd": pilot["mean_posterior_sd"],
        "p_improves_at_zero": pilot["p_improves"],
        "power_curve": [{k: r[k] for k in keep} for r in curve],
        "n_models": len(set(design.cells["model"].to_list())),
        "n_cells": design.cells.height,
        "rule": design.rule.as_dict(),
        "sims": sims,
        "seed": seed,
        "variance_components": "posterior_means" if components is None else "posterior_draws",
        "component_draws": None if components is None else summarise_draws(components[:sims]),
        "units": "d' units per unit of the scale variable",
        "method": "selfmodel.power.dprime: signal-detection cells simulated from the fit, each data "
        "set fitted by the normal approximation of per-cell d' on a grid over its variance components",
    }
