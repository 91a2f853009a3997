"""The model zoo beside the main scale model: SDT, pooled baseline, within/between split.

Each companion model is fitted to the same cells as ``models/scale.py`` (so LOO compares like
with like), its effect is decided with the same declared rule, and its checks (prior and
posterior predictive, LOO with Pareto-k, diagnostics) are summarised for ``results.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

import models as model_registry
from analysis import checks
from analysis.fit import Fit, SamplerSettings, fit
from analysis.hypotheses import DecisionRule
from analysis.results import slope_decisions

#: Companion models fitted by ``selfmodel run`` (in this order) unless ``--models`` says otherwise.
DEFAULT_MODELS: tuple[str, ...] = ("scale", "sdt", "pooled", "within_between")


@dataclass
class ZooResult:
    """Fits and their JSON summaries."""

    fits: dict[str, Fit] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


def sdt_cells(cells: pl.DataFrame) -> pl.DataFrame:
    """Binary cells with both outcomes observed (what the signal-detection model needs)."""
    return cells.filter(pl.col("binary") & ((pl.col("n_signal") > 0) | (pl.col("n_noise") > 0)))


def _models_per_task(data: pl.DataFrame, tasks: Sequence[str]) -> dict[str, int]:
    return {t: data.filter(pl.col("task") == t)["model"].n_unique() for t in tasks}


def _fit_info(f: Fit, data: pl.DataFrame) -> dict[str, Any]:
    info = {k: v for k, v in f.provenance.items() if k != "sampling_seconds"}
    info["file"] = f"fits/{f.model}-{f.provenance['cache_key'][:16]}.nc"
    info["cells"] = data.height
    return info


def run_checks(
    name: str,
    f: Fit,
    data: pl.DataFrame,
    *,
    seed: int,
    loo: bool,
    cache_dir: Path | None,
) -> dict[str, Any]:
    """Prior and posterior predictive checks and (if ``loo``) PSIS-LOO of one fit.

    With ``cache_dir`` (the fits folder) each result is saved as JSON beside the fit and
    reused while it is unchanged (see ``analysis/checks.py``): an unchanged second run
    recomputes no check.
    """
    module = model_registry.get(name)
    out: dict[str, Any] = {
        "prior_predictive": checks.prior_predictive(module, data, seed=seed, cache_dir=cache_dir),
        "posterior_predictive": checks.posterior_predictive(
            f, module, data, seed=seed, cache_dir=cache_dir
        ),
    }
    if loo:
        out["loo"] = checks.loo(f, module, data, cache_dir=cache_dir)
    return out


def fit_zoo(
    usable: pl.DataFrame,
    *,
    names: Sequence[str],
    seed: int,
    settings: SamplerSettings,
    rule: DecisionRule,
    tasks: Sequence[str],
    cache_dir: Path | None,
    progress: Callable[[str], None],
    main_fit: Fit | None = None,
    other_data: Mapping[str, pl.DataFrame] | None = None,
) -> ZooResult:
    """Fit the companion models in ``names`` (``scale`` may be passed in as ``main_fit``).

    ``other_data`` gives the table of a model that is not fitted to the cells
    (``items``: model x item counts; ``self_vs_other``: predictor x target counts).
    """
    other = dict(other_data or {})
    out = ZooResult()
    if main_fit is not None:
        out.fits["scale"] = main_fit
    data_for: dict[str, pl.DataFrame] = {}
    for name in names:
        module = model_registry.get(name)
        data = other.get(name, sdt_cells(usable) if name == "sdt" else usable)
        data_for[name] = data
        if name in out.fits:
            continue
        if data.height == 0 or data["model"].n_unique() < rule.min_models:
            out.summary[name] = {
                "fitted": False,
                "reason": f"fewer than {rule.min_models} models with usable data",
            }
            continue
        if name == "self_vs_other" and data["is_self"].n_unique() < 2:
            out.summary[name] = {
                "fitted": False,
                "reason": "the records have no cross-predictions (every predictor is the model "
                "itself)"
                if data["is_self"].all()
                else "the records have no self-predictions",
            }
            progress(f"'{name}' not fitted: {out.summary[name]['reason']}")
            continue
        progress(f"sampling '{name}' model ({module.SUMMARY})")
        f = fit(name, data, seed=seed, settings=settings, cache_dir=cache_dir)
        progress(f"'{name}': {'reused saved fit' if f.reused else f'sampled in {f.seconds:.1f} s'}")
        out.fits[name] = f
    loos: dict[str, Any] = {}
    for name, f in out.fits.items():
        module = model_registry.get(name)
        data = data_for.get(name, usable)
        entry: dict[str, Any] = {
            "fitted": True,
            "summary": module.SUMMARY,
            "fit": _fit_info(f, data),
            "diagnostics": f.diagnostics,
        }
        n_models = data["model"].n_unique()
        counts = _models_per_task(data, tasks)
        if name == "sdt":
            entry["sensitivity"] = slope_decisions(
                f,
                effect_var="beta_dprime",
                per_task_var="dprime_slope_task",
                rule=rule,
                n_models=n_models,
                tasks=tasks,
                models_per_task=counts,
            )
            entry["bias"] = slope_decisions(
                f,
                effect_var="beta_criterion",
                per_task_var="criterion_slope_task",
                rule=rule,
                n_models=n_models,
                tasks=tasks,
                models_per_task=counts,
            )
        elif name == "within_between":
            for var, key in (("beta_within", "within"), ("beta_between", "between")):
                entry[key] = slope_decisions(
                    f,
                    effect_var=var,
                    per_task_var="within_slope_task" if key == "within" else None,
                    rule=rule,
                    n_models=n_models,
                    tasks=tasks if key == "within" else [],
                    models_per_task=counts,
                )
        elif name in ("items", "self_vs_other"):
            # items: the scale slope with item effects (does it change the verdict?);
            # self_vs_other: the self-knowledge advantage (positive: a model predicts itself
            # better than other models predict it)
            entry["effect"] = slope_decisions(
                f,
                effect_var=module.EFFECT,
                per_task_var=module.PER_TASK_EFFECT,
                rule=rule,
                n_models=n_models,
                tasks=tasks,
                models_per_task=counts,
            )
            entry["effect"]["parameter"] = module.EFFECT
        progress(f"checks for '{name}' (prior/posterior predictive, LOO)")
        # LOO only on the cells: sdt and the other tables observe other counts (not comparable)
        with_loo = name not in ("sdt", *other)
        entry.update(run_checks(name, f, data, seed=seed, loo=with_loo, cache_dir=cache_dir))
        if with_loo:
            loos[name] = entry["loo"]
        out.summary[name] = entry
    if len(loos) >= 2:
        out.summary["loo_comparison"] = checks.compare(loos)
    return out
