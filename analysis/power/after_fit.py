"""What the fitted design could detect: the minimum detectable slope from a finished run's variance components."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scipy.stats import norm

from selfmodel.common.paths import DEFAULT_SEED
from selfmodel.decisions import hypotheses
from selfmodel.decisions.effects import SCALE_UNITS, rope_for, x_by_model
from selfmodel.decisions.hypotheses import DecisionRule
from selfmodel.fitting.sampling import cached_json, frame_sha256, package_versions, source_sha256
from selfmodel.power.approximate_fit import plugin_sd_of
from selfmodel.power.design import TARGET_POWER, Design, Progress
from selfmodel.power.design_from_data import design_from_results
from selfmodel.power.dprime import design_from_sdt_fit, dprime_mde
from selfmodel.power.posterior_draws import (
    scale_component_draws,
    sdt_component_draws,
    summarise_draws,
)
from selfmodel.power.sweep import Ticker, mde_of, normal_theory_mde, sweep_of

# --------------------------------------------------------------------------- after a fit


def mde_from_fit(
    results: Mapping[str, Any],
    *,
    sims: int = 100,
    seed: int | None = None,
    progress: bool | Progress = False,
    cache_dir: Path | str | None = None,
    components: Sequence[Mapping[str, float]] | None = None,
) -> dict[str, Any]:
    r"""What the fitted design could detect: the slope found with 80% power.

    The design is the one in ``results`` (models in the slope, cells' readable n, task
    accuracies) and the variance components are the fit's posterior means
    (:func:`design_from_results`). A pilot of ``sims // 3`` data sets at slope 0 gives the
    expected posterior sd :math:`\bar s` of the slope and the normal-theory detectable slope
    :math:`r + (z_{(1+h)/2} + z_{0.8})\,\bar s` (ROPE :math:`r`, HDI probability :math:`h`);
    the power curve is then simulated at multiples of it and interpolated at 0.8.

    Parameters
    ----------
    results
        A ``results.json`` dict carrying ``variance_components`` (posterior means of
        ``sigma_family``, ``sigma_model``, ``sigma_cell`` and ``sigma_delta``).
    sims
        Simulated data sets per slope.
    seed
        Seed (default: the run's seed in ``results["settings"]``).
    progress
        As in :func:`run_power`.
    components
        Variance components per simulated data set (``Design`` field names), e.g. draws from
        the fit's posterior (:func:`selfmodel.power.posterior_draws.scale_component_draws`);
        at least ``sims`` entries. ``None``: every data set uses the posterior means.
    cache_dir
        Folder to save the result in (the run's fits folder) and reuse it from while the
        design read from ``results`` (:func:`design_from_results`), ``sims``, ``seed``, the
        code of ``analysis/power/`` and of ``analysis/decisions/hypotheses/`` and the package versions are
        unchanged (:func:`selfmodel.fitting.sampling.cached_json`); ``None`` always simulates.

    Returns
    -------
    dict
        ``mde_80`` (interpolated; ``None`` when even the largest swept slope stays below
        80%), ``mde_80_mc_se`` (its Monte Carlo standard error), ``mde_80_normal_theory``,
        ``expected_posterior_sd``,
        ``p_practically_null_at_zero`` (chance of a ``practically_null`` verdict when the
        true slope is 0), ``sd_needed_for_practically_null`` (the posterior sd at which the
        HDI fits inside the ROPE), ``plugin_sd`` and ``plugin_sd_unlimited_items`` (the
        slope's posterior sd at the fitted variance components, as observed and with
        unlimited items per cell: how much more items could help), ``power_curve``, ``design``, ``rule``, ``units``,
        ``sims``, ``seed``, ``method``, ``variance_components`` (``"posterior_means"`` or
        ``"posterior_draws"``) and ``component_draws`` (quantiles of the draws used, or ``None``).
    """
    seed = int(seed if seed is not None else (results.get("settings") or {}).get("seed", DEFAULT_SEED))
    design = design_from_results(results)
    if cache_dir is not None:

        key = {
            "design": repr(design),  # all that is read from results (plain values: exact)
            "sims": sims,
            "seed": seed,
            "components": repr(components),
            "sources": source_sha256(
                [*sorted(Path(__file__).parent.glob("*.py")),
                 *sorted(Path(hypotheses.__file__).parent.glob("*.py"))]
            ),
            "versions": package_versions(("scipy",)),
        }
        return cached_json(
            cache_dir, "mde_from_fit", key,
            lambda: mde_from_fit(results, sims=sims, seed=seed, progress=progress,
                                 components=components),
        )
    rule = design.rule
    pilot_sims = max(20, sims // 3)
    z_hdi = float(norm.ppf(0.5 + rule.hdi_prob / 2))
    ticker = Ticker(progress, pilot_sims + 6 * sims, "what this design could detect")
    try:
        pilot = sweep_of(design, [0.0], sims=pilot_sims, seed=seed, ticker=ticker,
                       components=components)[0]
        s_bar = pilot["mean_posterior_sd"]
        normal = normal_theory_mde(s_bar, rule)
        slopes = [round(normal * f, 4) for f in (0.6, 0.8, 0.9, 1.0, 1.15, 1.4)]
        curve = sweep_of(design, slopes, sims=sims, seed=seed, ticker=ticker, components=components)
    finally:
        ticker.close()
    grid_mde, interp = mde_of(curve)
    if grid_mde is not None and interp is None:
        interp = grid_mde  # the smallest swept slope already has >= 80% power
    mc_se = _mc_se(curve, interp, sims) if interp is not None else None
    return {
        "target_power": TARGET_POWER,
        "mde_80": interp,
        "mde_80_mc_se": mc_se,
        "mde_80_normal_theory": normal,
        "expected_posterior_sd": s_bar,
        "p_practically_null_at_zero": pilot["p_practically_null"],
        "p_improves_at_zero": pilot["p_improves"],
        "sd_needed_for_practically_null": rule.rope / z_hdi,
        "plugin_sd": plugin_sd_of(design),
        "plugin_sd_unlimited_items": plugin_sd_of(design, unlimited_items=True),
        "power_curve": [{k: r[k] for k in _CURVE_KEYS} for r in curve],
        "design": _design_summary(design),
        "rule": rule.as_dict(),
        "units": design.units,
        "sims": sims,
        "seed": seed,
        "variance_components": "posterior_means" if components is None else "posterior_draws",
        "component_draws": None if components is None else summarise_draws(components[:sims]),
        "method": "selfmodel.power.mde_from_fit: simulated from the fitted variance components "
        + ("(posterior means)" if components is None else
           "(one posterior draw per simulated data set)")
        + ", each data set fitted by the approximate fit of selfmodel.power",
    }


#: The columns of each power-curve row kept in ``design_sensitivity``.
_CURVE_KEYS = (
    "slope",
    "p_improves",
    "se_improves",
    "p_credibly_positive",
    "p_no_credible_effect",
    "p_practically_null",
    "mean_posterior_sd",
)


def _mc_se(curve: list[dict[str, Any]], interp: float, sims: int) -> float | None:
    """Monte Carlo se of the interpolated MDE (delta method on the local power slope)."""
    # delta method: se of P(improves) at 0.8 over the local slope of the power curve
    rows = sorted(curve, key=lambda r: r["slope"])
    i = next(i for i, r in enumerate(rows) if r["slope"] >= interp)
    lo, hi = rows[max(0, i - 1)], rows[min(len(rows) - 1, max(i, 1))]
    rise = (hi["p_improves"] - lo["p_improves"]) / max(hi["slope"] - lo["slope"], 1e-12)
    if rise > 0:
        return math.sqrt(TARGET_POWER * (1 - TARGET_POWER) / sims) / rise
    return None


def _design_summary(design: Design) -> dict[str, Any]:
    """The fitted design as ``design_sensitivity["design"]`` shows it."""
    return {
        "n_models": len(design.models),
        "n_families": len(design.families),
        "tasks": [
            {"task": t.name, "n_per_cell": t.items, "accuracy": t.accuracy}
            for t in design.tasks
        ],
        "sigma_family": design.sigma_family,
        "sigma_model": design.sigma_model,
        "sigma_cell": design.sigma_cell,
        "sigma_task_slope": design.sigma_task_slope,
    }


#: Keys of the posterior-means power kept beside the posterior-draws one.
_PLUGIN_KEYS = ("mde_80", "mde_80_mc_se", "expected_posterior_sd", "variance_components")


def power_after_fit(
    results: Mapping[str, Any],
    scale_idata: Any,
    *,
    sdt: tuple[Any, Any] | None = None,
    sims: int = 100,
    seed: int,
    cache_dir: Path | str | None = None,
    progress: bool | Progress = False,
) -> dict[str, Any]:
    """``design_sensitivity``: accuracy and d' power of the fitted design.

    The accuracy section is :func:`mde_from_fit` with one posterior draw of the variance
    components per simulated data set (:func:`~selfmodel.power.posterior_draws.scale_component_draws`);
    ``at_posterior_means`` holds the same at the posterior means for comparison. ``dprime``
    is :func:`selfmodel.power.dprime.dprime_mde` of the signal-detection fit ``sdt`` (its
    ``idata`` and table) with posterior-drawn components, or ``None`` without that fit.
    """
    comps = scale_component_draws(scale_idata, sims, seed=seed)
    out = mde_from_fit(results, sims=sims, seed=seed, cache_dir=cache_dir, components=comps,
                       progress=progress)
    plain = mde_from_fit(results, sims=sims, seed=seed, cache_dir=cache_dir, progress=progress)
    out["at_posterior_means"] = {k: plain.get(k) for k in _PLUGIN_KEYS}
    out["dprime"] = None
    if sdt is not None:
        idata, data = sdt
        scale = (results.get("settings") or {}).get("scale", "params")
        rule = DecisionRule(**{k: v for k, v in ((results.get("settings") or {}).get("rule") or {}).items()
                               if k in ("rope", "hdi_prob", "min_models")})
        rule = rope_for(rule, scale, x_by_model(data), effect="sensitivity")[0]
        design = design_from_sdt_fit(idata, data, rule)
        dcomps = sdt_component_draws(idata, sims, seed=seed)

        def compute() -> dict[str, Any]:
            return dprime_mde(design, sims=sims, seed=seed, components=dcomps)

        if cache_dir is None:
            out["dprime"] = compute()
        else:
            key = {"cells": frame_sha256(design.cells), "design": repr({k: v for k, v in vars(design).items()
                                                                       if k != "cells"}),
                   "components": repr(dcomps), "sims": sims, "seed": seed,
                   "sources": source_sha256(sorted(Path(__file__).parent.glob("*.py"))),
                   "versions": package_versions(("scipy",))}
            out["dprime"] = cached_json(cache_dir, "dprime_power", key, compute)
        out["dprime"]["units"] = SCALE_UNITS.get(scale, "").replace("logits", "d' units")
    return out
