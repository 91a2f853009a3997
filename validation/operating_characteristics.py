"""Operating characteristics of the decision rule: are the scale slope's and the d' slope's intervals and decisions right?

Simulated data sets with a known slope are fitted with the real models (``models/scale.py``,
``models/sdt.py``) through nutpie, and for each one we record whether the central 50% and
90% posterior intervals cover the true slope, the rank of the truth among the posterior
draws (simulation-based calibration, Talts et al. 2018, arXiv:1804.06788), and the
decision of ``selfmodel.decisions.hypotheses.decide`` under the default rule.

Arms (each ``--sims`` data sets, default 100):

``scale_null``
    ``selfmodel.records.simulate.simulate_scale_cells(beta=0, sigma_task_slope=0)``: 4 families x 4
    sizes, 3 tasks x 300 predictions, every task slope exactly 0. Reports the rate of
    ``improves`` (must be <= 5%) with a Clopper-Pearson interval, overall and per task.
``scale_effect``
    ``simulate_scale_cells`` with ``beta ~ N(0, 0.3)`` and task deviations
    ``N(0, 0.1)``. The truth of the model's ``beta`` is the mean of the drawn task slopes
    (the model's task deviations sum to zero, ``models/scale.py``); of ``slope_task`` the
    task slopes.
``scale_sbc``
    Simulation-based calibration: parameters *and* counts drawn from the scale model's
    own prior predictive (``pm.sample_prior_predictive`` on ``selfmodel.models.scale.build``) on the
    ``simulate_scale_cells`` design of seed ``DESIGN_SEED``. Under a correct implementation
    and sampler, ranks are uniform and coverage is nominal *exactly* (averaged over the
    prior), not just approximately.
``sdt_sbc``
    The same for ``models/sdt.py`` on the design of the shipped data (``data_raw/``: 14
    sized models x 3 tasks, their signal and noise counts); truth of ``beta_dprime``.
``sdt_null`` (not in the default run)
    ``sdt`` prior predictive with ``beta_dprime`` fixed at 0 (``pm.do``): the rate of
    ``improves`` for the d' slope under its null.

Compile once, swap the data. Every arm's model is compiled by nutpie once and re-used for
every data set (``CompiledModel.with_data``): the observed counts become shared variables,
and for the ``scale_*`` arms so does the scale predictor ``x`` (``simulate_scale_cells``
draws new model sizes per data set). ``models/scale.py`` bakes ``x`` in as a constant, so
:func:`shared_data_model` replaces that constant in the graph of the real
``selfmodel.models.scale.build`` model (``pymc.model.fgraph``) -- the math is the model file's, not a
copy; ``tests/validation/test_operating_characteristics.py`` checks the rewritten model's log density equals
``scale.build`` on the new data.

Why not ``simuk``: it refits through ``pm.sample`` on a fresh ``pm.observe`` model per
simulation, which with nutpie means a ~35-50 s numba compile per data set (hours here),
and it has no arms with fixed (non-prior) truths such as the null arm.
The ranks here follow the same definition (number of posterior draws below the truth,
Talts et al. 2018, Algorithm 1) on 99 equally spaced draws, so ranks take 100 values.

Usage::

    .venv/bin/python validation/operating_characteristics.py                 # all default arms, 100 sims each
    .venv/bin/python validation/operating_characteristics.py --quick --out /tmp/cal    # smoke test (~3 sims)

    .venv/bin/python validation/operating_characteristics.py --ship          # only refresh the package data

Writes ``OUT/operating_characteristics.json`` and ``OUT/operating_characteristics.md`` (``OUT`` = ``validation/results``);
a full run into the default folder (and ``--ship`` alone) also writes the package data
``analysis/data/operating_characteristics.json``, the summary ``selfmodel run`` puts into
``results.json`` and the report shows (``make operating-characteristics-data``).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from selfmodel.decisions.hypotheses import DecisionRule, decide  # noqa: E402
from selfmodel.fitting.sampling import SamplerSettings, diagnose, package_versions  # noqa: E402
from selfmodel.records.contract import DECISIONS  # noqa: E402

SEED = 20261130
DESIGN_SEED = 7
#: Posterior draws the rank is computed on (ranks take L + 1 values).
RANK_DRAWS = 99
RANK_BINS = 10
LEVELS = (0.5, 0.9)
DEFAULT_ARMS = ("scale_null", "scale_effect", "sdt_sbc", "scale_sbc", "sdt_null")
ALL_ARMS = DEFAULT_ARMS  # arm seeds follow this order: do not reorder
EFFECT_SD = 0.3
#: Sampler settings: the pipeline's, with 500 tuning + 500 draws per chain (2000 draws: enough
#: for 50%/90% intervals and the 94% HDI; the pipeline's 2000 per chain would double the cost).
SCALE_SETTINGS = replace(SamplerSettings(), draws=500, tune=500)
#: ``sdt`` at target_accept 0.9: at the pipeline's 0.99 a fit took 24-75 s here (2-4x the
#: leapfrog steps) with no divergences at either setting on four prior draws; divergences
#: are counted per fit and coverage is also reported over the fits that passed diagnostics.
SDT_SETTINGS = replace(SamplerSettings(), draws=500, tune=500, target_accept=0.9)
QUICK_SETTINGS = replace(SamplerSettings(), draws=150, tune=200)


# --------------------------------------------------------------------------- statistics


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson 1934) binomial interval for k successes in n trials."""
    from scipy.stats import binomtest

    if n == 0:
        return (float("nan"), float("nan"))
    ci = binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = clopper_pearson(k, n)
    return {"k": int(k), "n": int(n), "rate": (k / n) if n else None, "ci95": [lo, hi]}


def central_interval(draws: np.ndarray, level: float) -> tuple[float, float]:
    a = (1 - level) / 2
    lo, hi = np.quantile(draws, [a, 1 - a])
    return float(lo), float(hi)


def rank_of(truth: float, draws: np.ndarray, n: int = RANK_DRAWS) -> int:
    """Number of ``n`` equally spaced posterior draws below the truth (0..n)."""
    flat = np.asarray(draws, dtype=float).ravel()
    idx = np.linspace(0, flat.size - 1, n).round().astype(int)
    return int(np.sum(flat[idx] < truth))


def rank_histogram(ranks: list[int], *, n: int = RANK_DRAWS, bins: int = RANK_BINS) -> dict[str, Any]:
    """Counts of ranks in ``bins`` equal bins of the ``n + 1`` values and a chi-square test."""
    from scipy.stats import chisquare

    r = np.asarray(ranks, dtype=int)
    if r.size == 0:
        return {"bins": bins, "counts": [], "chi2": None, "p_value": None}
    counts = np.bincount(np.minimum(r * bins // (n + 1), bins - 1), minlength=bins)
    res = chisquare(counts)
    return {
        "bins": bins,
        "counts": counts.tolist(),
        "expected_per_bin": r.size / bins,
        "chi2": float(res.statistic),
        "p_value": float(res.pvalue),
    }


def summarise_draws(truth: float, draws: np.ndarray) -> dict[str, Any]:
    flat = np.asarray(draws, dtype=float).ravel()
    out: dict[str, Any] = {"truth": float(truth), "mean": float(flat.mean()), "sd": float(flat.std(ddof=1))}
    for level in LEVELS:
        lo, hi = central_interval(flat, level)
        out[f"covered{int(level * 100)}"] = bool(lo <= truth <= hi)
    out["rank"] = rank_of(truth, flat)
    return out


# --------------------------------------------------------------------------- models


def shared_data_model(model: Any, *, constants: dict[str, np.ndarray], observed: list[str]) -> Any:
    """Copy of ``model`` whose given constants and observed values are shared variables.

    Parameters
    ----------
    model
        A ``pm.Model`` (from a ``models/*.py`` ``build``).
    constants
        New shared-variable name -> the exact array that the model holds as a constant
        (e.g. ``{"x_cells": x}``); that constant is replaced everywhere in the graph.
    observed
        Observed variables whose values become shared variables ``<name>_observed``.

    Returns
    -------
    pymc.Model
        Same random variables and log density; compile it with nutpie once and swap the
        data with ``compiled.with_data(x_cells=..., k_observed=...)``.
    """
    import pytensor
    from pymc.model.fgraph import fgraph_from_model, model_from_fgraph
    from pytensor.graph.basic import Constant

    if constants:
        fg, _ = fgraph_from_model(model, inlined_views=True)
        swaps = []
        for name, value in constants.items():
            value = np.asarray(value)
            found = [
                v for v in fg.variables
                if isinstance(v, Constant) and np.shape(v.data) == value.shape
                and np.asarray(v.data).dtype == value.dtype and np.array_equal(v.data, value)
            ]
            if len(found) != 1:
                raise ValueError(f"expected one constant equal to '{name}' in the graph, found {len(found)}")
            swaps.append((found[0], pytensor.shared(value, name=name)))
        fg.replace_all(swaps, import_missing=True)
        model = model_from_fgraph(fg, mutate_fgraph=True)
    for name in observed:
        rv = model[name]
        value = np.asarray(model.rvs_to_values[rv].data if hasattr(model.rvs_to_values[rv], "data")
                           else model.rvs_to_values[rv].eval())
        model.rvs_to_values[rv] = pytensor.shared(value.astype("int64"), name=f"{name}_observed")
    return model


def scale_constants(cells: Any) -> dict[str, np.ndarray]:
    """The data-derived constants of ``scale.build(cells)``'s graph, by shared-variable name.

    ``x_cells``, and the shift direction of the decorrelated slope basis
    (``selfmodel.models.decorrelation.shift_direction``: family part ``slope_dir_family``, model
    part ``slope_dir_model``), which follows from ``x``. Swapping ``x_cells`` alone would
    leave the old direction in the graph: a valid reparameterisation, but a different prior
    from the one ``scale.build`` gives the new data.
    """
    from selfmodel.models.decorrelation import model_level, shift_direction
    from selfmodel.models.graph import factorize

    model_idx, models = factorize(cells["model"])
    fam_of_cell, _ = factorize(cells["family"])
    x = cells["x"].to_numpy().astype(float)
    x_model, fam_of_model = model_level(model_idx, x, fam_of_cell, len(models))
    d_u, d_v = shift_direction(x_model, fam_of_model)
    return {"x_cells": x, "slope_dir_family": d_u, "slope_dir_model": d_v}


def scale_design(seed: int = DESIGN_SEED) -> Any:
    from selfmodel.records.simulate import simulate_scale_cells

    cells, _ = simulate_scale_cells(seed=seed)
    return cells


def sdt_design() -> Any:
    """Binary cells of the sized models in ``data_raw/`` (the shipped design)."""
    import polars as pl

    from selfmodel.records.cells import build_cells
    from selfmodel.records.ingest import ingest
    from selfmodel.records.registry import load_registry

    raw = ROOT / "data_raw"
    ing = ingest([raw / "records.csv"], registry=raw / "registry.csv")
    cells = build_cells(ing.records, load_registry(raw / "registry.csv"), scale="params")
    return cells.filter(pl.col("x").is_not_null() & pl.col("binary") & (pl.col("n") > 0))


def sample(compiled: Any, data: dict[str, np.ndarray], settings: SamplerSettings, seed: int) -> Any:
    from selfmodel.fitting.sampling import sample_nutpie

    return sample_nutpie(compiled.with_data(**data), settings, seed)


# --------------------------------------------------------------------------- arms


@dataclass
class Arm:
    name: str
    model: str
    effect: str
    per_task: str
    generator: str
    null: bool


ARMS = {
    "scale_null": Arm("scale_null", "scale", "beta", "slope_task",
                      "simulate_scale_cells(beta=0, sigma_task_slope=0)", True),
    "scale_effect": Arm("scale_effect", "scale", "beta", "slope_task",
                        f"simulate_scale_cells(beta ~ N(0, {EFFECT_SD}), sigma_task_slope=0.1)", False),
    "scale_sbc": Arm("scale_sbc", "scale", "beta", "slope_task",
                     f"prior predictive of models/scale.py on simulate_scale_cells(seed={DESIGN_SEED}) design",
                     False),
    "sdt_sbc": Arm("sdt_sbc", "sdt", "beta_dprime", "dprime_slope_task",
                   "prior predictive of models/sdt.py on the data_raw/ design (sized models, binary cells)",
                   False),
    "sdt_null": Arm("sdt_null", "sdt", "beta_dprime", "dprime_slope_task",
                    "prior predictive of models/sdt.py with beta_dprime fixed at 0 (pm.do)", True),
}


def _truths_from_prior(prior: Any, i: int, effect: str, per_task: str) -> tuple[float, dict[str, float]]:
    beta = float(prior[effect].values[0, i])
    st = prior[per_task].isel(chain=0, draw=i)
    return beta, {str(t): float(st.sel(task=t)) for t in st["task"].values}


def datasets(arm: Arm, sims: int) -> tuple[Any, list[dict[str, Any]]]:
    """The design the model is compiled on, and per simulated data set: data + truths."""
    import pymc as pm

    from selfmodel.models import scale, sdt
    from selfmodel.records.simulate import simulate_scale_cells

    arm_offset = ALL_ARMS.index(arm.name) * 100_000
    out: list[dict[str, Any]] = []
    if arm.name in ("scale_null", "scale_effect"):
        design = scale_design()
        for s in range(sims):
            seed = SEED + arm_offset + s
            if arm.null:
                cells, truth = simulate_scale_cells(seed=seed, beta=0.0, sigma_task_slope=0.0)
            else:
                beta = float(np.random.default_rng(seed).normal(0.0, EFFECT_SD))
                cells, truth = simulate_scale_cells(seed=seed, beta=beta)
            for col in ("model", "family", "task"):
                if cells[col].to_list() != design[col].to_list():
                    raise RuntimeError("simulate_scale_cells changed its layout; recompile per shape")
            slopes = {f"task{t}": float(v) for t, v in enumerate(truth["task_slopes"])}
            out.append({
                "sim": s, "seed": seed,
                "data": {**scale_constants(cells), "k_observed": cells["k"].to_numpy().astype("int64")},
                "truth": float(np.mean(truth["task_slopes"])), "truth_task": slopes,
                "generated_beta": float(truth["beta"]),
            })
        return design, out
    seed = SEED + arm_offset
    if arm.model == "scale":
        design = scale_design()
        pm_model = scale.build(design)
        obs = ("k",)
    else:
        design = sdt_design()
        pm_model = sdt.build(design)
        obs = ("hits", "false_alarms")
    if arm.null:
        pm_model = pm.do(pm_model, {arm.effect: 0.0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pp = pm.sample_prior_predictive(draws=sims, model=pm_model, random_seed=seed)
    for s in range(sims):
        if arm.null:
            beta = 0.0
            st = pp.prior[arm.per_task].isel(chain=0, draw=s)
            slopes = {str(t): float(st.sel(task=t)) for t in st["task"].values}
        else:
            beta, slopes = _truths_from_prior(pp.prior, s, arm.effect, arm.per_task)
        data = {f"{o}_observed": pp.prior_predictive[o].values[0, s].astype("int64") for o in obs}
        if arm.model == "scale":
            data.update(scale_constants(design))
        out.append({"sim": s, "seed": seed + 1 + s, "data": data, "truth": beta, "truth_task": slopes})
    return design, out


def compile_arm(arm: Arm, design: Any) -> Any:
    import nutpie

    from selfmodel.models import scale, sdt

    if arm.model == "scale":
        m = shared_data_model(scale.build(design), constants=scale_constants(design), observed=["k"])
    else:
        m = shared_data_model(sdt.build(design), constants={}, observed=["hits", "false_alarms"])
    return nutpie.compile_pymc_model(m)


def run_arm(arm: Arm, sims: int, settings: SamplerSettings, rule: DecisionRule,
            compiled_cache: dict[str, Any] | None = None) -> dict[str, Any]:
    """Fit every data set of one arm; the compiled model is shared by arms of the same model."""
    cache = compiled_cache if compiled_cache is not None else {}
    design, sets = datasets(arm, sims)
    t0 = time.perf_counter()
    if arm.model not in cache:
        cache[arm.model] = compile_arm(arm, design)
    compiled = cache[arm.model]
    compile_s = time.perf_counter() - t0
    n_models = design["model"].n_unique()
    rows = []
    for d in sets:
        t1 = time.perf_counter()
        idata = sample(compiled, d["data"], settings, seed=d["seed"])
        secs = time.perf_counter() - t1
        post = idata.posterior
        # diagnostics of the calibrated quantities (the slopes); divergences are global
        diag = diagnose(idata, var_names=[arm.effect, arm.per_task])
        eff = post[arm.effect].values
        row = {"sim": d["sim"], "seed": d["seed"], **summarise_draws(d["truth"], eff)}
        dec = decide(eff, rule, n_models=n_models)
        row["decision"] = dec["decision"]
        row["prob_positive"] = dec["prob_positive"]
        row["task"] = {}
        for t, tv in d["truth_task"].items():
            td = post[arm.per_task].sel(task=t).values
            s = summarise_draws(tv, td)
            row["task"][t] = {k: s[k] for k in ("truth", "mean", "covered50", "covered90", "rank")}
            row["task"][t]["decision"] = decide(td, rule, n_models=n_models)["decision"]
        row.update({
            "max_rhat": diag["max_rhat"], "min_ess_bulk": diag["min_ess_bulk"],
            "divergences": diag["divergences"], "passed": bool(diag["passed"]),
            "seconds": round(secs, 1),
        })
        if "generated_beta" in d:
            row["generated_beta"] = d["generated_beta"]
        rows.append(row)
        print(f"{arm.name} {d['sim']:3d}: truth {d['truth']:+.3f} mean {row['mean']:+.3f} "
              f"sd {row['sd']:.3f} rank {row['rank']:2d} {row['decision']:<18} div {row['divergences']} "
              f"({secs:.1f} s)", flush=True)
    return {"arm": arm.name, "model": arm.model, "effect": arm.effect, "generator": arm.generator,
            "null": arm.null, "n_models": int(n_models), "cells": int(design.height),
            "sampler": {**settings.__dict__}, "compile_seconds": round(compile_s, 1), "rows": rows}


def summarise_arm(res: dict[str, Any]) -> dict[str, Any]:
    rows = res["rows"]
    n = len(rows)
    passed = [r for r in rows if r["passed"]]
    out: dict[str, Any] = {k: res[k] for k in ("arm", "model", "effect", "generator", "null", "n_models",
                                              "cells", "sampler", "compile_seconds")}
    out["n_fits"] = n
    out["n_passed_diagnostics"] = len(passed)
    out["fits_with_divergences"] = sum(r["divergences"] > 0 for r in rows)
    out["median_seconds_per_fit"] = float(np.median([r["seconds"] for r in rows])) if rows else None
    for level in LEVELS:
        key = f"covered{int(level * 100)}"
        out[f"coverage{int(level * 100)}"] = rate(sum(r[key] for r in rows), n)
        out[f"coverage{int(level * 100)}_passed"] = rate(sum(r[key] for r in passed), len(passed))
    out["ranks"] = [r["rank"] for r in rows]
    out["rank_histogram"] = rank_histogram(out["ranks"])
    tasks = sorted(rows[0]["task"]) if rows else []
    out["task_coverage90"] = {t: rate(sum(r["task"][t]["covered90"] for r in rows), n) for t in tasks}
    out["task_coverage50"] = {t: rate(sum(r["task"][t]["covered50"] for r in rows), n) for t in tasks}
    task_ranks = [r["task"][t]["rank"] for r in rows for t in tasks]
    out["task_rank_histogram"] = rank_histogram(task_ranks)
    decisions = DECISIONS
    out["decisions"] = {d: sum(r["decision"] == d for r in rows) for d in decisions}
    out["improves_rate"] = rate(out["decisions"]["improves"], n)
    if res["null"]:
        # per-task false 'improves' only where every task slope is truly 0 (scale_null);
        # in sdt_null the task slopes keep their prior deviations around a zero mean
        if all(r["task"][t]["truth"] == 0.0 for r in rows for t in tasks):
            out["task_improves_rate"] = {
                t: rate(sum(r["task"][t]["decision"] == "improves" for r in rows), n) for t in tasks
            }
            any_task = sum(any(r["task"][t]["decision"] == "improves" for t in tasks) for r in rows)
            out["any_task_improves_rate"] = rate(any_task, n)
        out["null_check"] = {
            "criterion": "rate of 'improves' <= 0.05",
            "passed": bool(n and out["improves_rate"]["rate"] <= 0.05),
        }
    else:
        wrong = sum((r["decision"] == "improves" and r["truth"] <= 0)
                    or (r["decision"] == "worsens" and r["truth"] >= 0) for r in rows)
        out["wrong_sign_decisions"] = rate(wrong, n)
    out["rmse"] = float(np.sqrt(np.mean([(r["mean"] - r["truth"]) ** 2 for r in rows]))) if rows else None
    out["mean_posterior_sd"] = float(np.mean([r["sd"] for r in rows])) if rows else None
    return out


# --------------------------------------------------------------------------- report


def _pct(r: dict[str, Any]) -> str:
    if not r["n"]:
        return "-"
    lo, hi = r["ci95"]
    return f"{100 * r['rate']:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}] (n={r['n']})"


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Operating characteristics of the scale slope and the d' slope",
        "",
        f"Generated by `validation/operating_characteristics.py` ({result['generated_utc']}). Reproduce with:",
        "",
        "```",
        result["command"],
        "```",
        "",
        "Each simulated data set is fitted with the real model file through nutpie (compiled once",
        "per arm; the data are swapped with `with_data`). Intervals are central (equal-tailed)",
        "posterior intervals; brackets are exact (Clopper-Pearson) 95% intervals of a rate.",
        "Decisions use the default rule of `selfmodel.decisions.hypotheses.DecisionRule` "
        f"({result['rule']['description']}).",
        "",
        "| arm | slope | fits | 50% coverage | 90% coverage | 'improves' | SBC rank uniformity p | fits with divergences |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for a in result["arms"]:
        lines.append(
            f"| {a['arm']} | `{a['effect']}` | {a['n_fits']} | {_pct(a['coverage50'])} | "
            f"{_pct(a['coverage90'])} | {_pct(a['improves_rate'])} | "
            f"{a['rank_histogram']['p_value']:.2f} | {a['fits_with_divergences']} |"
        )
    lines += ["", "## Null arms: false 'improves'", ""]
    if not any(a["null"] for a in result["arms"]):
        lines.append("(no null arm in this run)")
    for a in result["arms"]:
        if not a["null"]:
            continue
        verdict = "PASS" if a["null_check"]["passed"] else "FAIL"
        line = (f"- **{a['arm']}** (`{a['effect']}` = 0): 'improves' in {_pct(a['improves_rate'])} "
                f"of data sets ({verdict}: criterion <= 5%)")
        if "task_improves_rate" in a:
            line += (f"; every task slope is 0 too: any task slope 'improves' in "
                     f"{_pct(a['any_task_improves_rate'])}; per task: "
                     + ", ".join(f"{t} {_pct(r)}" for t, r in a["task_improves_rate"].items()))
        lines.append(line + ".")
    lines += ["", "## Task slopes", "", "| arm | task | 50% coverage | 90% coverage |", "|---|---|---|---|"]
    for a in result["arms"]:
        for t in a["task_coverage90"]:
            lines.append(f"| {a['arm']} | {t} | {_pct(a['task_coverage50'][t])} | {_pct(a['task_coverage90'][t])} |")
    lines += ["", f"## Rank histograms ({RANK_BINS} bins of the {RANK_DRAWS + 1} possible ranks)", "",
              "Uniform under correct calibration (exactly so for the `*_sbc` arms, whose truths are",
              "prior draws; approximately for fixed-truth arms). p: chi-square test of uniformity.", "",
              "```"]
    for a in result["arms"]:
        h = a["rank_histogram"]
        top = max(h["counts"]) if h["counts"] else 1
        lines.append(f"{a['arm']} ({a['effect']}), p = {h['p_value']:.2f}")
        for i, c in enumerate(h["counts"]):
            lo = i * (RANK_DRAWS + 1) // RANK_BINS
            hi = (i + 1) * (RANK_DRAWS + 1) // RANK_BINS - 1
            lines.append(f"  {lo:3d}-{hi:3d} {c:4d} {'#' * round(40 * c / top)}")
        lines.append("")
    lines += ["```", "", "## Other numbers", "",
              "Diagnostics are those of `selfmodel.fitting.sampling.diagnose` on the slopes (R-hat <= 1.01, bulk ESS",
              ">= 400, no divergences). With 500 draws per chain (a quarter of the pipeline's 2000) the",
              "bulk ESS of the slope falls short of 400 in many fits; coverage among the fits that pass",
              "is shown beside the overall coverage.", "",
              "| arm | RMSE of the mean | mean posterior sd | fits passing diagnostics | "
              "50% / 90% coverage, passing fits | median s per fit | compile s |",
              "|---|---|---|---|---|---|---|"]
    for a in result["arms"]:
        comp = f"{a['compile_seconds']:.0f}" if a["compile_seconds"] >= 1 else "shared"
        passed = f"{_pct(a['coverage50_passed'])} / {_pct(a['coverage90_passed'])}"
        lines.append(f"| {a['arm']} | {a['rmse']:.3f} | {a['mean_posterior_sd']:.3f} | "
                     f"{a['n_passed_diagnostics']}/{a['n_fits']} | {passed} | "
                     f"{a['median_seconds_per_fit']:.1f} | {comp} |")
    for a in result["arms"]:
        if "wrong_sign_decisions" in a:
            lines.append("")
            lines.append(f"{a['arm']}: decisions of the wrong sign (improves with truth <= 0 or worsens "
                         f"with truth >= 0): {_pct(a['wrong_sign_decisions'])}.")
    lines += ["", "Sampler: " + "; ".join(f"{a['arm']}: {a['sampler']['chains']} chains x "
                                          f"{a['sampler']['draws']} draws after {a['sampler']['tune']} tuning, "
                                          f"target_accept {a['sampler']['target_accept']}" for a in result["arms"]),
              "", f"Why not simuk: {result['simuk']}", ""]
    return "\n".join(lines)


SIMUK_NOTE = (
    "simuk refits with pm.sample on a new pm.observe model per simulation (with nutpie: a numba "
    "compile of ~35-50 s per data set) and has no fixed-truth (null) arms; ranks here follow its "
    "definition (draws below "
    "the truth, Talts et al. 2018) on 99 thinned draws."
)


def main(argv: list[str] | None = None) -> int:
    from datetime import UTC, datetime

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sims", type=int, default=100, help="data sets per arm (default 100)")
    ap.add_argument("--arms", nargs="+", choices=ALL_ARMS, default=None,
                    help=f"arms to run (default: {' '.join(DEFAULT_ARMS)})")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: 3 data sets per arm, 150 draws; writes to --out (default a temp dir)")
    ap.add_argument("--out", type=Path, default=None, help="output folder (default validation/results)")
    ap.add_argument("--ship", action="store_true",
                    help="only rewrite the package data analysis/data/operating_characteristics.json from "
                         "validation/results/operating_characteristics.json (what the report shows)")
    args = ap.parse_args(argv)
    if args.ship:
        from selfmodel.robustness.stage import (
            OPERATING_CHARACTERISTICS_PACKAGE_DATA,
            write_operating_characteristics_package_data,
        )

        write_operating_characteristics_package_data()
        print(f"wrote {OPERATING_CHARACTERISTICS_PACKAGE_DATA}")
        return 0
    arms = args.arms or list(DEFAULT_ARMS)
    if args.quick:
        sims = min(args.sims, 3)
        out_dir = args.out or Path("/tmp/selfmodel-operating-characteristics-quick")
    else:
        sims = args.sims
        out_dir = args.out or ROOT / "validation" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    rule = DecisionRule()
    warnings.simplefilter("ignore")
    command = " ".join([".venv/bin/python", "validation/operating_characteristics.py", *(argv if argv is not None else sys.argv[1:])])
    result: dict[str, Any] = {
        "generated_by": "validation/operating_characteristics.py",
        "generated_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command,
        "seed": SEED,
        "sims_per_arm": sims,
        "quick": bool(args.quick),
        "rule": {**rule.as_dict(), "description": rule.describe()},
        "rank_draws": RANK_DRAWS,
        "levels": list(LEVELS),
        "versions": package_versions(),
        "platform": platform.platform(),
        "simuk": SIMUK_NOTE,
        "arms": [],
        "complete": False,
    }
    compiled: dict[str, Any] = {}
    for name in arms:
        arm = ARMS[name]
        settings = QUICK_SETTINGS if args.quick else (SCALE_SETTINGS if arm.model == "scale" else SDT_SETTINGS)
        if args.quick and arm.model == "sdt":
            settings = replace(settings, target_accept=SDT_SETTINGS.target_accept)
        res = run_arm(arm, sims, settings, rule, compiled)
        summary = summarise_arm(res)
        summary["fits"] = _columns(res["rows"])
        result["arms"].append(summary)
        _write(out_dir, result)
    result["complete"] = True
    _write(out_dir, result)
    print(f"wrote {out_dir / 'operating_characteristics.json'} and {out_dir / 'operating_characteristics.md'}")
    if not args.quick and args.out is None:
        from selfmodel.robustness.stage import (
            OPERATING_CHARACTERISTICS_PACKAGE_DATA,
            write_operating_characteristics_package_data,
        )

        write_operating_characteristics_package_data()
        print(f"wrote {OPERATING_CHARACTERISTICS_PACKAGE_DATA} (the summary the report shows)")
    return 0


def _columns(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-fit results as columns (one list per quantity; small on disk)."""
    cols: dict[str, Any] = {}
    for k in ("truth", "mean", "sd"):
        cols[k] = [round(r[k], 4) for r in rows]
    for k in ("rank", "covered50", "covered90", "decision", "divergences", "passed"):
        cols[k] = [r[k] for r in rows]
    tasks = sorted(rows[0]["task"]) if rows else []
    for k in ("truth", "mean", "rank", "decision"):
        cols[f"task_{k}"] = {
            t: [round(r["task"][t][k], 4) if isinstance(r["task"][t][k], float) else r["task"][t][k]
                for r in rows]
            for t in tasks
        }
    return cols


def dumps(obj: Any) -> str:
    """JSON with 1-space indent, lists of scalars kept on one line, non-finite numbers as null."""
    import re

    from selfmodel.common.jsonable import rounded

    text = json.dumps(rounded(obj, 6), indent=1, sort_keys=True, allow_nan=False)
    return re.sub(r"\[\s*([^\[\]{}]*?)\s*\]", lambda m: "[" + re.sub(r"\s*\n\s*", " ", m.group(1)) + "]",
                  text) + "\n"


def _write(out_dir: Path, result: dict[str, Any]) -> None:
    from selfmodel.common import atomic

    atomic.write_text(out_dir / "operating_characteristics.json", dumps(result))
    if result["arms"]:
        atomic.write_text(out_dir / "operating_characteristics.md", markdown(result))


if __name__ == "__main__":
    raise SystemExit(main())
