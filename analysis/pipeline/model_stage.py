"""Stage 4: fit, check and decide every requested model, reading only its declaration.

Each model file in ``models/`` declares in ``SPEC`` (``models/spec.py``) the data table it
is fitted to, the effects it decides, whether PSIS-LOO applies and which report sections it
feeds. This stage never branches on a model's name: for each requested model it builds the
declared table (``analysis/analyses/model_inputs.py``), fits it (``selfmodel.fitting.sampling.fit``, cached), decides each
declared effect with the declared rule (``selfmodel.decisions.effects.slope_decisions``), runs the
prior and posterior predictive checks and, where declared, LOO; then it compares the LOO
models. The verdict model (``SPEC.role == "verdict"``) is fitted first by
:func:`fit_verdict` and passed in, so every companion is fitted to the same cells.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from selfmodel import models as model_registry
from selfmodel.analyses.model_inputs import Tables, models_per_task
from selfmodel.common import arviz_ops
from selfmodel.decisions.effects import rope_for, slope_decisions, x_by_model
from selfmodel.decisions.hypotheses import DecisionRule
from selfmodel.fitting import checks
from selfmodel.fitting.fitpool import concurrently
from selfmodel.fitting.fitter import Fitter
from selfmodel.fitting.sampling import Fit
from selfmodel.records.contract import SCALE_COLUMNS


@dataclass
class VerdictFit:
    """The verdict model's fit (``None`` with ``reason`` when it could not be fitted)."""

    fit: Fit | None
    usable: pl.DataFrame
    reason: str | None


@dataclass
class ModelFits:
    """Fits of the requested models, the tables they were fitted to, and their summaries.

    ``summary`` is the ``model_zoo`` section of ``results.json`` (model name -> entry, plus
    ``loo_comparison``).
    """

    fits: dict[str, Fit] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    data_for: dict[str, pl.DataFrame] = field(default_factory=dict)


def fitted_declaration(f: Fit) -> dict[str, Any]:
    """What the fitted model is, from its own declaration and its saved options and priors.

    ``models/<name>.declaration(options, priors)`` gives the equations, the prose and the
    priors of the variables the model has under the options saved in the fit's provenance,
    so the report never shows an equation or prior of a term not in the fit. A model without ``declaration`` gets no
    equations, its ``SUMMARY`` and the saved priors of the variables in its posterior.
    """
    module = model_registry.get(f.model)
    prov = f.provenance
    declare = getattr(module, "declaration", None)
    if declare is not None:
        d = declare(prov.get("options"), prov.get("priors"))
        return {"source": f"selfmodel.models.{f.model}.declaration", "options": d.options,
                "equations": d.equations, "prose": d.prose,
                "priors": {k: [v[0], v[1]] for k, v in d.priors.items()}}
    names = set(arviz_ops.posterior(f.idata).data_vars)
    return {"source": "the fit's saved priors of the variables in its posterior",
            "options": dict(prov.get("options") or {}), "equations": None,
            "prose": module.SUMMARY,
            "priors": {k: v for k, v in (prov.get("priors") or {}).items() if k in names}}


def fit_info(f: Fit, data: pl.DataFrame) -> dict[str, Any]:
    """The ``fit`` entry of a fitted model: provenance without timings, file, cells, declaration."""
    info = {k: v for k, v in f.provenance.items() if k != "sampling_seconds"}
    info["file"] = f"fits/{f.model}-{f.provenance['cache_key'][:16]}.nc"
    info["cells"] = data.height
    info["declaration"] = fitted_declaration(f)
    return info


def fit_verdict(
    cells: pl.DataFrame,
    *,
    scale: str,
    rule: DecisionRule,
    fitter: Fitter,
) -> VerdictFit:
    """Fit the verdict model to the cells whose model has the scale variable."""
    name = model_registry.verdict().NAME
    usable = cells.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))
    n_models = usable["model"].n_unique()
    if n_models < rule.min_models:
        return VerdictFit(
            None,
            usable,
            (
                f"only {n_models} model(s) have '{SCALE_COLUMNS[scale]}' in the registry; "
                f"at least {rule.min_models} are needed to estimate a slope"
            ),
        )
    if usable["x"].n_unique() < 2:
        return VerdictFit(None, usable, "every model has the same value of the scale variable")
    settings = fitter.sampler
    then = functools.partial(checks_after_fit, name=name, data=usable, seed=fitter.seed,
                             cache_dir=fitter.cache_dir)
    f = fitter.fit(name, usable, then=then, why=(
        f"sampling '{name}' model: {usable.height} cells, {n_models} models, "
        f"{settings.chains} chains x {settings.draws} draws ({settings.sampler})"))
    fitter.progress("reused saved fit (inputs unchanged)" if f.reused else f"sampled in {f.seconds:.1f} s")
    return VerdictFit(f, usable, None)


def checks_after_fit(
    f: Fit, *, name: str, data: pl.DataFrame, seed: int, cache_dir: Path | None
) -> None:
    """Compute and save :func:`run_checks` of a new fit where it was sampled (``fit(then=...)``).

    With worker processes the checks then run in the worker, beside the other fits; the
    pipeline's own call of :func:`run_checks` reads them back from ``cache_dir``.
    """
    if cache_dir is not None:
        loo = model_registry.get(name).SPEC.loo is not None
        run_checks(name, f, data, seed=seed, loo=loo, cache_dir=cache_dir)


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
    reused while it is unchanged (see ``analysis/fitting/checks.py``): an unchanged second run
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


def exclusion_text(excluded: Sequence[Mapping[str, Any]], task: str | None = None) -> str | None:
    """The reasons cells were left out of a model's table, counted (of one task, or all).

    Examples
    --------
    >>> exclusion_text([{"model": "a", "task": "t", "reason": "no outcome-false trial"},
    ...                 {"model": "b", "task": "t", "reason": "no outcome-false trial"}], "t")
    'every cell of t was left out of the table: no outcome-false trial (2 cells)'
    """
    rows = [e for e in excluded if task is None or e["task"] == task]
    if not rows:
        return None
    counts = Counter(str(e["reason"]) for e in rows)
    why = "; ".join(f"{r} ({n} cell{'s' if n > 1 else ''})" for r, n in sorted(counts.items()))
    where = f"every cell of {task} was" if task is not None else f"{len(rows)} cell(s) were"
    return f"{where} left out of the table: {why}"


def declared_decisions(
    module: Any,
    f: Fit | None,
    data: pl.DataFrame,
    *,
    rule: DecisionRule,
    tasks: Sequence[str],
    scale: str = "params",
    excluded: Sequence[Mapping[str, Any]] = (),
    reason: str | None = None,
) -> dict[str, Any]:
    """Each effect in ``module.SPEC.decides`` decided on ``f`` (key -> decision).

    Each effect's ROPE is the declared one in its own quantity and the scale variable's
    unit (``selfmodel.decisions.effects.rope_for``), recorded as ``rope`` and ``rope_meaning``.
    Without a fit (``f`` None) every decision is ``not_estimable`` with ``reason``; a task
    with no cell in ``data`` is ``not_estimable`` with the reasons its cells were left out
    (``excluded``, from :meth:`selfmodel.analyses.model_inputs.Tables.excluded`).
    """
    n_models = data["model"].n_unique() if "model" in data.columns else 0
    by_task = "task" in data.columns
    counts = models_per_task(data, list(tasks)) if by_task else {}
    absent = {t: exclusion_text(excluded, t) for t in tasks
              if not by_task or data.filter(pl.col("task") == t).height == 0}
    out: dict[str, Any] = {}
    for effect in module.SPEC.decides:
        eff_rule, meaning = rope_for(rule, scale, x_by_model(data), effect=effect.key)
        out[effect.key] = slope_decisions(
            f,
            effect_var=effect.variable,
            per_task_var=effect.per_task,
            rule=eff_rule,
            n_models=n_models,
            tasks=tasks if effect.per_task else [],
            models_per_task=counts,
            reason=reason,
            absent_reasons={t: r for t, r in absent.items() if r},
        )
        out[effect.key]["rope"] = eff_rule.rope
        out[effect.key]["rope_meaning"] = meaning
        if effect.name_parameter:
            out[effect.key]["parameter"] = effect.variable
    return out


def _sample_requested(
    names: Sequence[str],
    tables: Tables,
    out: ModelFits,
    *,
    rule: DecisionRule,
    fitter: Fitter,
) -> None:
    to_fit: list[str] = []
    for name in names:
        module = model_registry.get(name)
        data = tables.get(module.SPEC.table)
        out.data_for[name] = data
        if name in out.fits:
            continue
        if data.height == 0 or data["model"].n_unique() < rule.min_models:
            why = exclusion_text(tables.excluded(module.SPEC.table))
            out.summary[name] = {
                "fitted": False,
                "reason": f"fewer than {rule.min_models} models with usable data"
                + (f" ({why})" if why else ""),
            }
            continue
        reason = module.SPEC.unfit_reason(data) if module.SPEC.unfit_reason else None
        if reason:
            out.summary[name] = {"fitted": False, "reason": reason}
            fitter.progress(f"'{name}' not fitted: {reason}")
            continue
        to_fit.append(name)

    def sample(name: str) -> Fit:
        then = functools.partial(checks_after_fit, name=name, data=out.data_for[name],
                                 seed=fitter.seed, cache_dir=fitter.cache_dir)
        f = fitter.fit(name, out.data_for[name], then=then,
                       why=f"sampling '{name}' model ({model_registry.get(name).SUMMARY})")
        fitter.progress(f"'{name}': {'reused saved fit' if f.reused else f'sampled in {f.seconds:.1f} s'}")
        return f

    # with worker processes the models are sampled at once (selfmodel.fitting.fitpool); kept in order
    fitted = concurrently(*[functools.partial(sample, name) for name in to_fit])
    out.fits.update(zip(to_fit, fitted, strict=True))


def fit_models(
    tables: Tables,
    *,
    names: Sequence[str],
    rule: DecisionRule,
    tasks: Sequence[str],
    fitter: Fitter,
    verdict: Fit,
) -> ModelFits:
    """Fit, decide and check the models in ``names`` (the verdict model is passed in).

    ``fitter`` fits them (the run's seed, sampler settings and fit cache); its seed and fit
    cache are also those of the checks, and its progress line tells each step.
    """
    out = ModelFits()
    out.fits[verdict.model] = verdict
    _sample_requested(names, tables, out, rule=rule, fitter=fitter)
    loos: dict[str, Any] = {}
    for name in names:  # not fitted: each declared effect is not estimable, with the reason
        entry = out.summary.get(name)
        if entry is None or entry.get("fitted") or name not in out.data_for:
            continue
        module = model_registry.get(name)
        excluded = tables.excluded(module.SPEC.table)
        entry["excluded_cells"] = excluded
        entry.update(declared_decisions(module, None, out.data_for[name], rule=rule, tasks=tasks,
                                        scale=tables.scale, excluded=excluded,
                                        reason=entry["reason"]))
    for name, f in out.fits.items():
        module = model_registry.get(name)
        data = out.data_for.get(name, tables.usable)
        entry = {
            "fitted": True,
            "summary": module.SUMMARY,
            "fit": fit_info(f, data),
            "diagnostics": f.diagnostics,
        }
        if module.SPEC.role != "verdict":  # the verdict is decided into scale_effect
            excluded = tables.excluded(module.SPEC.table)
            entry["excluded_cells"] = excluded
            entry.update(
                declared_decisions(module, f, data, rule=rule, tasks=tasks, scale=tables.scale,
                                   excluded=excluded)
            )
        fitter.progress(f"checks for '{name}' (prior/posterior predictive, LOO)")
        with_loo = module.SPEC.loo is not None
        entry.update(run_checks(name, f, data, seed=fitter.seed, loo=with_loo,
                                cache_dir=fitter.cache_dir))
        if with_loo:
            loos[name] = entry["loo"]
        out.summary[name] = entry
    if len(loos) >= 2:
        out.summary["loo_comparison"] = checks.compare(loos)
    return out
