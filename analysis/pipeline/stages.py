"""The stages tied together; :func:`run` is what ``selfmodel run`` calls.

``run`` reads top to bottom as the list of stages. Each stage takes the typed
:class:`~selfmodel.pipeline.state.RunState`, fills its own fields and writes its files into ``out``
(atomically); ``results.json`` is written once, by :func:`selfmodel.pipeline.results.write_results`,
from the state, and the report reads only saved results. ``docs/stages.md`` maps every
stage to the module that owns it and the ``results.json`` keys it computes.
"""

from __future__ import annotations

import functools
import json
import math
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from selfmodel import models as model_registry
from selfmodel.analyses import describe
from selfmodel.analyses.confidence_calibration import confidence_calibration_table
from selfmodel.analyses.contrasts import contrast_section, not_fitted_section
from selfmodel.analyses.frequentist import NUMERICAL_ERRORS, crosscheck_table, run_frequentist
from selfmodel.analyses.model_inputs import Tables, models_per_task
from selfmodel.analyses.rescoring import self_vs_other_rescored
from selfmodel.analyses.skill import confidence_calibration, skill_table
from selfmodel.analyses.training import SCALE_EXCLUSION_REASON, training_effect, validate_design
from selfmodel.common import atomic
from selfmodel.common import progress as progress_lines
from selfmodel.common.jsonable import rounded
from selfmodel.common.outputs import check_writable
from selfmodel.common.paths import DEFAULT_DATA, PACKAGE, PACKAGE_DIR, REPORT_QMD
from selfmodel.common.progress import counter, step_prefix
from selfmodel.decisions.effects import scale_effect
from selfmodel.decisions.elpd_words import elpd_sentence
from selfmodel.decisions.hypotheses import label_roles, load_hypotheses, one_rule
from selfmodel.decisions.multiplicity import add_bayes_factor_ranges, multiplicity
from selfmodel.decisions.status import low_yield_sentence, status_lines
from selfmodel.fitting import fitpool
from selfmodel.fitting.fitpool import concurrently
from selfmodel.fitting.sampling import for_model
from selfmodel.fitting.summaries import (
    accuracy_points,
    diagnostics_section,
    population_curves,
    truth_comparison,
    variance_components,
)
from selfmodel.pipeline.model_stage import fit_info, fit_models, fit_verdict
from selfmodel.pipeline.results import build_results, data_section, write_results
from selfmodel.pipeline.state import RunConfig, RunState
from selfmodel.power.after_fit import power_after_fit
from selfmodel.records.cells import build_cells, derived_models
from selfmodel.records.contract import InputError
from selfmodel.records.importers.mapping.records_apply import load_transform, without_join_file
from selfmodel.records.ingest import IngestResult, ingest, write_ingest
from selfmodel.records.ingest.discover import Inputs, resolve_inputs
from selfmodel.records.registry import load_registry
from selfmodel.report.document import render_report
from selfmodel.robustness.confounds import scale_axis_confounds, without_family
from selfmodel.robustness.effect_sensitivity import effect_prior_sensitivity
from selfmodel.robustness.holdout import leave_group_out
from selfmodel.robustness.missingness import missingness, strict_accuracy_refit
from selfmodel.robustness.mixed_check import (
    draws_from_fit,
    holdout_group_check,
    mixed_check_of_fit,
    most_extreme_family,
)
from selfmodel.robustness.sdt_crosscheck import sdt_crosscheck
from selfmodel.robustness.sensitivity import companion_scale_variable_refits
from selfmodel.robustness.stage import (
    evidence_from,
    hypotheses_section,
    operating_characteristics,
    robustness_refits,
)

__all__ = ["DEFAULT_DATA", "REPORT_QMD", "Inputs", "RunConfig", "RunState", "load_results",
           "resolve_inputs", "run"]

Progress = Callable[[str], None]


def display_path(p: Path) -> Path:
    """``p`` as results.json names it: free of the machine's paths where it can be.

    A file of the package (the shipped default hypotheses) by its installed name,
    ``selfmodel/data/hypotheses.toml``, in a checkout too; else relative to the working
    directory when it lies inside it, else relative to the folder the package sits in, else
    as given.
    """
    resolved = p.resolve()
    try:
        return Path(PACKAGE) / resolved.relative_to(PACKAGE_DIR.resolve())
    except ValueError:
        pass
    for base in (Path.cwd(), PACKAGE_DIR.parent):
        try:
            return resolved.relative_to(base.resolve())
        except ValueError:
            continue
    return p


def _models_table(
    cells: pl.DataFrame, registry: pl.DataFrame | None, scale: str
) -> list[dict[str, Any]]:
    per_model = (
        cells.group_by("model")
        .agg(
            # every self-prediction record, those with nothing to score (not_asked, unanswered) too
            (pl.col("n_total") + pl.col("n_not_asked") + pl.col("n_unanswered")).sum().alias("n_total"),
            pl.col("family").first(),
            pl.col("scale_raw").first(),
            pl.col("x").first(),
            pl.col("params_b").first(),
            pl.col("active_params_b").first(),
            pl.col("capability").first(),
        )
        .sort("model")
    )
    reg_models = set(registry["model"].to_list()) if registry is not None else set()
    return [
        {
            "model": r["model"],
            "family": r["family"],
            "params_b": r["params_b"],
            "active_params_b": r["active_params_b"],
            "capability": r["capability"],
            "records": int(r["n_total"]),
            "in_registry": r["model"] in reg_models,
            # derived checkpoints have a size but no x: not in the slope (analysis/analyses/training.py)
            "in_scale_fit": r["x"] is not None,
        }
        for r in per_model.iter_rows(named=True)
    ]


def run_ingest(cfg: RunConfig, inputs: Inputs, say: Progress | None = None) -> IngestResult:
    """Read, validate and account for every record; write OUT/records.parquet etc.

    Inputs larger than memory are ingested in bounded memory (streamed, said by ``say``);
    the stages after this one read the used records in memory (``docs/performance.md``).
    """
    transform = load_transform(cfg.study_mapping) if cfg.study_mapping else None
    paths, key_file = without_join_file(inputs.record_paths, transform)
    result = ingest(
        paths,
        mapping=cfg.mapping or None,
        config=cfg.config,
        registry=inputs.registry,
        transform=transform,
        say=say,
    )
    result.summary["files_not_read"] = inputs.not_read + key_file
    check_yield(result.summary, allow=cfg.allow_low_yield)
    write_ingest(result, cfg.out)
    _ = result.records  # a streamed result's records, read now from where they were written
    return result


def check_yield(summary: Mapping[str, Any], *, allow: bool) -> None:
    """Stop (exit 2) when fewer than half the records read are kept, unless allowed.

    A run on 38 of 1,440 rows is a run on a mistake (a confidence on another scale, a
    wrong column) more often than on data; the user sees why first and goes on knowingly
    with ``--allow-low-yield`` (the report then leads with the same sentence).
    """
    text = low_yield_sentence(summary)
    if text is not None and not allow:
        raise InputError(f"{text} Fix the input or mapping ('selfmodel ingest ... --out DIR' "
                         "writes quarantine.parquet with every reason), or pass "
                         "--allow-low-yield to go on with the rows kept.")


def stage_ingest(state: RunState, say: Progress) -> None:
    """Stage 1 (``data``): ingest the records, load the registry."""
    say(f"ingesting {len(state.inputs.record_paths)} file(s)")
    state.ingest = run_ingest(state.config, state.inputs, say)
    s = state.ingest.summary
    excluded = f", excluded {s['records_excluded']}" if s.get("records_excluded") else ""
    say(
        f"records read {s['records_read']}, used {s['records_used']}, "
        f"quarantined {s['records_quarantined']}, duplicate {s['records_duplicate']}{excluded}"
    )
    for note in s.get("registry_contradictions", []):
        say(note["text"])
    for line in status_lines({"data": s, "diagnostics": {"passed": True, "max_rhat": 1.0}}):
        say(line["text"])
    state.data_section = data_section(s)
    state.registry = load_registry(state.inputs.registry) if state.inputs.registry else None


def stage_cells(state: RunState, say: Progress) -> None:
    """Stage 2 (``models``, ``tasks``, ``by_model_task``): model x task cells, descriptives."""
    assert state.ingest is not None
    cfg = state.config
    cells = build_cells(state.ingest.records, state.registry, scale=cfg.scale)
    atomic.write_parquet(cfg.out / "cells.parquet", cells)
    state.cells = cells
    state.tasks = sorted(cells["task"].unique().to_list())
    # a trained_tasks entry the records do not have stops the run here, before any sampling
    validate_design(state.registry, state.inputs.registry, state.tasks)
    if cfg.confidence_calibration_contrasts is not None:  # so does --calibration-by on a design without it
        confidence_calibration_groups(state.ingest.records, cfg.confidence_calibration_contrasts)
    state.models_section = _models_table(cells, state.registry, cfg.scale)
    state.tasks_section = describe.by_task(cells)
    state.by_model_task_section = describe.by_model_task(cells)


def stage_verdict(state: RunState, say: Progress) -> None:
    """Stage 3: fit the verdict model and decide its declared effect.

    Computes ``scale_effect``, ``diagnostics``, ``fit``, ``curves``, ``accuracy_points``
    and ``variance_components``.
    """
    assert state.cells is not None and state.ingest is not None
    cfg = state.config
    v = fit_verdict(state.cells, scale=cfg.scale, rule=cfg.rule, fitter=cfg.fitter(say))
    state.verdict = v
    state.tables = Tables(v.usable, state.ingest.records, state.registry, cfg.scale)
    module = model_registry.verdict()
    (effect,) = module.SPEC.decides
    derived = set(derived_models(state.registry))
    excluded = sorted(
        set(state.cells["model"].to_list()) - set(v.usable["model"].to_list()) - derived
    )
    state.effect_section = scale_effect(
        v.fit,
        scale=cfg.scale,
        rule=cfg.rule,
        n_models=v.usable["model"].n_unique(),
        tasks=state.tasks,
        excluded_models=excluded,
        reason=v.reason,
        models_per_task=models_per_task(v.usable, state.tasks),
        verdict_name=module.NAME,
        effect_var=effect.variable,
        per_task_var=effect.per_task,
        fit_data=v.usable,
    )
    label_roles(state.effect_section, module.NAME, effect.variable, effect.per_task, state.hypotheses)
    if derived:
        state.effect_section["excluded_derived_checkpoints"] = {
            "models": sorted(derived & set(state.cells["model"].to_list())),
            "reason": SCALE_EXCLUSION_REASON,
        }
    state.confounds_section = scale_axis_confounds(v.usable, cfg.scale) if v.fit else None
    state.diagnostics_section = diagnostics_section(v.fit)
    if v.fit is not None:
        state.fit_section = fit_info(v.fit, v.usable)
        state.curves_section = population_curves(v.fit, v.usable, hdi_prob=cfg.rule.hdi_prob)
        state.points_section = accuracy_points(v.fit, v.usable)
        state.variance_section = variance_components(v.fit)
        state.mixed_predictive_section = mixed_check_of_fit(v.fit, v.usable, seed=cfg.seed)


def stage_models(state: RunState, say: Progress) -> None:
    """Stage 4 (``model_zoo`` and each model's headline section, e.g. ``sdt_effect``)."""
    cfg = state.config
    verdict = model_registry.verdict().NAME
    companions = [m for m in cfg.models if m != verdict]
    v = state.verdict
    if v is not None and v.fit is not None and companions and state.tables is not None:
        state.model_fits = fit_models(
            state.tables,
            names=[verdict, *companions],
            rule=cfg.rule,
            tasks=state.tasks,
            fitter=cfg.fitter(say),
            verdict=v.fit,
        )
        state.zoo_section = state.model_fits.summary
    for name, entry in (state.zoo_section or {}).items():
        if name in model_registry.REGISTRY:
            for e in model_registry.get(name).SPEC.decides:
                if isinstance(entry.get(e.key), dict):
                    label_roles(entry[e.key], name, e.variable, e.per_task, state.hypotheses)
    state.headline_sections = _headlines(state)


def stage_training(state: RunState, say: Progress) -> None:
    """Stage 4b (``training_effect``): derived checkpoints against their bases."""
    assert state.ingest is not None
    cfg = state.config
    truth = json.loads(state.inputs.truth.read_text()) if state.inputs.truth else None
    state.training_section = training_effect(
        state.ingest.records, state.registry, state.tasks, rule=cfg.rule,
        fitter=cfg.fitter(say), truth=truth,
    )


def stage_fits(state: RunState, say: Progress) -> None:
    """Stages 3 and 4 at once: the verdict and then the other models, beside the training fit.

    :func:`stage_training` needs none of the others' results, so with worker processes
    (``--jobs``) its fit runs while the verdict and model fits run (:mod:`selfmodel.fitting.fitpool`).
    """

    def verdict_then_models() -> None:
        stage_verdict(state, say)
        stage_models(state, say)

    concurrently(verdict_then_models, lambda: stage_training(state, say))
    stage_contrasts(state, say)


def confidence_calibration_groups(records: pl.DataFrame, asked: str = "auto") -> tuple[str, ...]:
    """The groups of the confidence-calibration table: ``asked`` (``--calibration-by``), or by the design.

    ``auto``: conditions within a model when the records have two or more; else tasks within
    a model (a study whose question sets are its tasks: e.g. hard against easy questions);
    else models. Asking for conditions or tasks that the records do not have is an error.
    """
    n_conditions = records["condition"].drop_nulls().n_unique() if "condition" in records.columns else 0
    n_tasks = records["task"].drop_nulls().n_unique()
    if asked == "condition" and n_conditions < 2:
        raise InputError(f"--calibration-by condition: the records have {n_conditions} condition(s); "
                         "compare conditions within a model only with two or more (a 'condition' "
                         "column), or use --calibration-by model or task.")
    if asked == "task" and n_tasks < 2:
        raise InputError("--calibration-by task: the records have one task; use --calibration-by "
                         "model.")
    if asked == "auto":
        asked = "condition" if n_conditions >= 2 else "task" if n_tasks >= 2 else "model"
    return ("model",) if asked == "model" else ("model", asked)


def stage_contrasts(state: RunState, say: Progress) -> None:
    """Stage 4c (``contrasts``, ``confidence_calibration_contrasts``): what such a study can decide.

    Fitted when the verdict model was not (closed models without sizes) or the records have
    two or more conditions; otherwise both stay ``None``. With ``--no-contrasts`` the model
    is not fitted and ``contrasts`` says so where it would have been. The confidence-calibration table
    (no fit: an item bootstrap) comes with the contrast model, and beside any model when
    asked (``--calibration-contrasts``, ``--calibration-by``); ``why`` says which.
    """
    assert state.ingest is not None
    cfg = state.config
    records = state.ingest.records
    n_conditions = records["condition"].drop_nulls().n_unique() if "condition" in records.columns else 0
    unfit = state.verdict is None or state.verdict.fit is None
    fit_contrasts = unfit or n_conditions >= 2
    why = "the scale model was not fitted" if unfit else f"the records have {n_conditions} conditions"
    asked = cfg.confidence_calibration_contrasts
    if asked is not None or (fit_contrasts and cfg.contrasts):
        by = confidence_calibration_groups(records, asked or "auto")
        say(f"confidence calibration per {' x '.join(by)} (item bootstrap)")
        state.confidence_calibration_contrasts_section = confidence_calibration_table(
            records, by=by, rule=cfg.rule, seed=cfg.seed)
        state.confidence_calibration_contrasts_section["why"] = (
            "requested (--calibration-contrasts)" if asked is not None
            else f"computed with the contrast model: {why}")
    if not fit_contrasts:
        return
    if not cfg.contrasts:
        state.contrasts_section = not_fitted_section(
            f"not requested (--no-contrasts), although {why}")
        return
    state.contrasts_section = contrast_section(records, rule=cfg.rule, fitter=cfg.fitter(say))
    state.contrasts_section["why_fitted"] = why


def _headlines(state: RunState) -> dict[str, Any]:
    """Each registered model's declared headline section.

    ``None`` when the model was not requested; requested but not fitted (e.g. no cell whose
    d' the data inform), ``fitted`` false, the ``reason`` and every decision
    ``not_estimable`` with it.
    """
    out: dict[str, Any] = {}
    zoo = state.zoo_section or {}
    fits = state.model_fits.fits if state.model_fits else {}
    for name, module in model_registry.REGISTRY.items():
        h = module.SPEC.headline
        if h is None:
            continue
        entry = zoo.get(name)
        if not entry or not all(e.key in entry for e in module.SPEC.decides):
            out[h.key] = None
            continue
        section: dict[str, Any] = {"fit_model": name, "units": h.units,
                                   "fitted": bool(entry.get("fitted"))}
        section.update({e.key: entry[e.key] for e in module.SPEC.decides})
        section["excluded_cells"] = entry.get("excluded_cells", [])
        if not entry.get("fitted"):  # requested, not fitted: every decision not_estimable
            section.update(reason=entry.get("reason"), finding=False)
            out[h.key] = section
            continue
        section["finding"] = bool(entry["diagnostics"]["passed"])
        if h.curves is not None and name in fits and state.model_fits is not None:
            section["curves"] = population_curves(
                fits[name],
                state.model_fits.data_for[name],
                hdi_prob=state.config.rule.hdi_prob,
                intercept=h.curves.intercept,
                slope=h.curves.slope,
                link=h.curves.link,
            )
        out[h.key] = section
    return out


def not_estimable(what: str, exc: BaseException) -> dict[str, Any]:
    """The section of an analysis that failed numerically: the reason, and the run goes on."""
    detail = " ".join(str(exc).split())[:200] or type(exc).__name__
    return {"estimable": False,
            "reason": f"{what} failed numerically on this design ({type(exc).__name__}: {detail})"}


def stage_frequentist(state: RunState, say: Progress) -> None:
    """Stage 5 (``frequentist``, ``crosscheck``): the frequentist cross-checks."""
    assert state.cells is not None and state.effect_section is not None
    say("frequentist cross-checks (GLM, wild cluster bootstrap, two-stage, permutation)")
    try:
        state.frequentist_section = run_frequentist(
            state.cells, seed=state.config.seed, derived=derived_models(state.registry)
        )
    except NUMERICAL_ERRORS as exc:  # each method is guarded; this catches the rest
        state.frequentist_section = not_estimable("the frequentist cross-checks", exc)
        say(f"not estimable: {state.frequentist_section['reason']}")
    state.crosscheck_section = crosscheck_table(state.frequentist_section, state.effect_section)
    state.sdt_crosscheck_section = sdt_crosscheck(
        state.cells, state.headline_sections.get("sdt_effect"), seed=state.config.seed
    )


def stage_skill(state: RunState, say: Progress) -> None:
    """Stage 6 (``skill``, ``confidence_calibration``, ``self_vs_other_rescored``, ``missingness``).

    Skill beyond base rates, stated confidence, self versus other by rescoring shared items,
    and how missing / unreadable predictions depend on scale (all from the records, no fits).
    """
    assert state.ingest is not None and state.cells is not None
    state.skill_section = skill_table(state.ingest.records)
    state.confidence_calibration_section = confidence_calibration(state.ingest.records)
    say("self versus other: rescoring each model's predictions against the others' outcomes")
    sizes = _log10_sizes(state.cells)
    state.self_vs_other_section = self_vs_other_rescored(
        state.ingest.records, sizes, seed=state.config.seed
    )
    state.missingness_section = missingness(state.ingest.records, state.cells)


def _log10_sizes(cells: pl.DataFrame) -> dict[str, float]:
    """log10 billions of total parameters per model that has a size (closed models lack one)."""
    per = cells.select("model", "params_b").unique("model").drop_nulls().sort("model")
    return {m: math.log10(v) for m, v in per.iter_rows() if v and v > 0}


def stage_truth(state: RunState, say: Progress) -> None:
    """Stage 7 (``truth_comparison``): estimates against a simulation's ``truth.json``."""
    if state.inputs.truth is None or state.effect_section is None:
        return
    truth = json.loads(state.inputs.truth.read_text())
    zoo = state.zoo_section or {}
    extra = [
        (e.truth[0], e.truth[1], (zoo.get(name) or {}).get(e.key))
        for name, module in model_registry.REGISTRY.items()
        for e in module.SPEC.decides
        if e.truth is not None and name in zoo
    ]
    state.truth_section = truth_comparison(truth, state.effect_section, extra)


def stage_robustness(state: RunState, say: Progress) -> None:
    """Stage 8 (``hypotheses``, ``sensitivity``, ``operating_characteristics``)."""
    cfg = state.config
    v = state.verdict
    assert v is not None and state.ingest is not None
    fits = dict(state.model_fits.fits) if state.model_fits is not None else {}
    if v.fit is not None:
        fits[v.fit.model] = v.fit
    known = state.model_fits.data_for if state.model_fits is not None else {}
    data_for = {name: known[name] if name in known else _table_of(state, name) for name in fits}
    why = v.reason or f"the {model_registry.verdict().NAME} model was not fitted"
    not_fitted = {name: f"model '{name}' was not fitted ({why})" for name in cfg.models}
    for name, entry in (state.zoo_section or {}).items():
        if isinstance(entry, dict) and entry.get("fitted") is False:
            not_fitted[name] = f"model '{name}' was not fitted: {entry.get('reason')}"
    say(f"declared hypotheses ({display_path(cfg.hypotheses)})")
    evidence = evidence_from(fits, data_for, not_fitted)
    section = hypotheses_section(state.hypotheses, cfg.hypotheses, evidence)
    section["file"] = str(display_path(cfg.hypotheses))  # read above, named machine-free
    add_bayes_factor_ranges(section["rows"], evidence, seed=cfg.seed)
    section["multiplicity"] = multiplicity(
        state.hypotheses, section["rows"], evidence, state.frequentist_section
    )
    if v.fit is not None and cfg.robustness:
        fitted = v.fit

        def refits() -> tuple[Any, Any]:
            try:
                return robustness_refits(
                    main=fitted,
                    usable=v.usable,
                    records=state.ingest.records if state.ingest else pl.DataFrame(),
                    registry=state.registry,
                    scale=cfg.scale,
                    rule=cfg.rule,
                    fitter=cfg.fitter(say),
                )
            except NUMERICAL_ERRORS as exc:
                failed = not_estimable("the robustness refits", exc)
                say(f"not estimable: {failed['reason']}")
                return failed, failed

        def family_left_out() -> None:
            if state.confounds_section is not None:
                state.robustness_checks_section["confounds.without_family"] = without_family(
                    v.usable,
                    state.confounds_section["largest_family"],
                    scale=cfg.scale,
                    rule=cfg.rule,
                    fitter=cfg.fitter(say),
                )

        # independent checks, each filling its own section: with worker processes their
        # fits run at once (selfmodel.fitting.fitpool); the companions' part joins sensitivity after
        (loo, sensitivity), _, _, companions, _ = concurrently(
            refits,
            family_left_out,
            lambda: _holdout_family_check(state, say),
            lambda: _companion_prior_sensitivity(state, say),
            lambda: _strict_accuracy(state, say),
        )
        if isinstance(loo, dict) and loo.get("elpd_diff") is not None and loo.get("dse") is not None:
            loo["sentence"] = elpd_sentence(
                float(loo["elpd_diff"]), float(loo["dse"]),
                better="model with the scale term", worse="model without the scale term", unit="cells",
            )
        section["scale_term_loo"] = loo
        state.sensitivity_section = sensitivity
        if companions is not None:
            sensitivity.update(companions)
        if cfg.holdout:
            section["scale_term_holdout"] = _leave_group_out(state, cfg.holdout, say)
    state.hypotheses_section = section
    state.operating_characteristics_section = operating_characteristics()


def _companion_prior_sensitivity(state: RunState, say: Progress) -> dict[str, Any] | None:
    """``sensitivity.effects`` and ``.effects_scale_variable`` of each companion model.

    Prior x0.5 / x2 variants and the other scale variables of every companion model's
    effects (``None`` without model fits); the refits run at once with worker processes.
    """
    mf, cfg, v = state.model_fits, state.config, state.verdict
    if mf is None or v is None:
        return None
    fitter = cfg.fitter(say)
    names = [name for name in sorted(mf.fits)
             if not (v.fit is not None and name == v.fit.model)
             and model_registry.get(name).SPEC.decides and name in mf.data_for]

    def priors(name: str) -> dict[str, Any]:
        return effect_prior_sensitivity(
            name, mf.fits[name], mf.data_for[name], rule=cfg.rule, scale=cfg.scale, fitter=fitter,
        )

    def variables() -> dict[str, Any]:
        return companion_scale_variable_refits(
            mf.fits, mf.data_for, verdict_model=v.fit.model if v.fit else None,
            records=state.ingest.records if state.ingest else pl.DataFrame(),
            registry=state.registry, scale=cfg.scale, rule=cfg.rule, fitter=fitter,
        )

    *effects, by_variable = concurrently(
        *[functools.partial(priors, name) for name in names], variables
    )
    return {"effects": dict(zip(names, effects, strict=True)),
            "effects_scale_variable": by_variable}


def _strict_accuracy(state: RunState, say: Progress) -> None:
    """``missingness.strict_accuracy_refit``: the verdict model refitted on strict accuracy."""
    v, cfg = state.verdict, state.config
    if v is None or v.fit is None or state.missingness_section is None or state.ingest is None:
        return
    at = "missingness.strict_accuracy_refit"
    try:
        state.robustness_checks_section[at] = strict_accuracy_refit(
            state.ingest.records, v.usable, v.fit, scale=cfg.scale, rule=cfg.rule,
            fitter=cfg.fitter(say),
        )
    except NUMERICAL_ERRORS as exc:
        state.robustness_checks_section[at] = not_estimable("the strict-accuracy refit", exc)


def _leave_group_out(state: RunState, group: str, say: Progress) -> dict[str, Any]:
    """``hypotheses.scale_term_holdout``: exact leave-one-``group``-out refits of both models."""
    cfg, v = state.config, state.verdict
    assert v is not None and v.fit is not None
    comparison = model_registry.get(v.fit.model).SPEC.without_effect
    if comparison is None:
        return {"status": "not_estimable", "reason": f"model '{v.fit.model}' declares no model without its effect"}

    fitter = cfg.fitter(say)

    def refit(name: str, rest: pl.DataFrame) -> Any:
        opts = dict(comparison.options) if name == comparison.model else None
        return fitter.fit(name, rest, options=opts, why=(
            f"{step_prefix()}leave-one-{group}-out: fitting '{name}' on {rest['model'].n_unique()} models"))

    return leave_group_out(v.usable, group=group, fit_without=refit, with_name=v.fit.model,
                           without_name=comparison.model, seed=cfg.seed,
                           min_models=cfg.rule.min_models)


def _holdout_family_check(state: RunState, say: Progress) -> None:
    """The mixed check's most extreme family, judged by an exact refit without it.

    Its own result, ``mixed_predictive.holdout_family``; ``write_results`` folds a flag into
    the check.
    """
    mixed, v, cfg = state.mixed_predictive_section, state.verdict, state.config
    at = "mixed_predictive.holdout_family"
    if not mixed or mixed.get("status") != "estimated" or v is None:
        return
    family = most_extreme_family(mixed)
    if family is None:
        state.robustness_checks_section[at] = {"status": "not_estimable",
                                               "reason": "fewer than 3 families"}
        return
    rest = v.usable.filter(pl.col("family") != family)
    if rest["model"].n_unique() < cfg.rule.min_models or rest["x"].n_unique() < 2:
        state.robustness_checks_section[at] = {
            "status": "not_estimable", "family": family,
            "reason": f"too few models without the {family} family"}
        return
    name = model_registry.verdict().NAME
    f = cfg.fitter(say).fit(name, rest,
                            why=f"predictive check: refitting '{name}' without the {family} family")
    got = draws_from_fit(f.idata)
    held = v.usable.filter(pl.col("family") == family)
    if got is None:
        return
    out = holdout_group_check(got[0], {c: held[c].to_list() for c in held.columns}, got[1],
                              seed=cfg.seed)
    out.update({"family": family, "refit_diagnostics_passed": bool(f.diagnostics.get("passed"))})
    state.robustness_checks_section[at] = out


def _table_of(state: RunState, name: str) -> pl.DataFrame:
    assert state.tables is not None
    return state.tables.get(model_registry.get(name).SPEC.table)


def stage_power(state: RunState, say: Progress) -> None:
    """Stage 9 (``design_sensitivity``): what this design could detect, from the fit."""
    v = state.verdict
    if v is None or v.fit is None or not state.config.power:
        return

    say("what this design could detect (power simulation, variance components drawn from the posterior)")
    # the design is read from the results built so far (models, cells, variance components)
    try:
        mf = state.model_fits
        # the d' power simulates the model that declares the sensitivity effect (models/sdt.py)
        sens = [n for n in sorted(mf.fits) if n in mf.data_for and any(
            e.key == "sensitivity" for e in model_registry.get(n).SPEC.decides)] if mf else []
        sdt = (mf.fits[sens[0]].idata, mf.data_for[sens[0]]) if mf and sens else None
        state.design_sensitivity_section = rounded(power_after_fit(
            build_results(state), v.fit.idata, sdt=sdt, seed=state.config.seed,
            cache_dir=state.config.cache_dir, progress=counter("power simulation") or False,
        ))
    except NUMERICAL_ERRORS as exc:
        state.design_sensitivity_section = not_estimable("the power simulation", exc)
        say(f"not estimable: {state.design_sensitivity_section['reason']}")


def _settings(cfg: RunConfig, inputs: Inputs) -> dict[str, Any]:
    return {
        "scale": cfg.scale,
        "seed": cfg.seed,
        "rule": cfg.rule.as_dict(),
        "rule_source": cfg.rule_source,
        "sampler": asdict(cfg.sampler),
        # the models whose sampling departs from the run's (models/*.py SPEC.sampling), as used
        "sampler_by_model": {
            name: asdict(own) for name in cfg.models
            if (own := for_model(cfg.sampler, model_registry.get(name).SPEC.sampling)) != cfg.sampler
        },
        "inputs": [str(p) for p in inputs.record_paths],
        "registry": str(inputs.registry) if inputs.registry else None,
        "mapping": cfg.mapping,
        "study_mapping": str(cfg.study_mapping) if cfg.study_mapping else None,
        "preset": cfg.preset,
    }


def _run_info(state: RunState, started: str, argv: Sequence[str] | None) -> dict[str, Any]:
    v = state.verdict
    fitted = v.fit if v is not None else None
    fits = dict(state.model_fits.fits) if state.model_fits else {}
    if fitted is not None:
        fits[fitted.model] = fitted
    return {
        "started_utc": started,
        "seconds_total": None,
        "sampling_seconds": round(fitted.seconds, 2) if fitted else None,
        "fit_reused": bool(fitted and fitted.reused),
        # per model: sampling (and compile) seconds of the fit as first sampled (timings are
        # kept out of results.json, which must not depend on the machine's speed)
        "model_seconds": {
            name: f.provenance.get("sampling_seconds") for name, f in sorted(fits.items())
        },
        "command": " ".join(argv) if argv is not None else " ".join(sys.argv),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
    }


#: The stages of :func:`run`, in order (each ``stage(state, progress)``).
STAGES: tuple[Callable[[RunState, Progress], None], ...] = (
    stage_ingest,
    stage_cells,
    stage_fits,
    stage_frequentist,
    stage_skill,
    stage_truth,
    stage_robustness,
    stage_power,
)


#: The ``RunState`` section fields each stage writes, and no other stage does
#: (``tests/pipeline/test_stage_ownership.py`` runs the pipeline and checks it).
SECTION_OWNERS: dict[str, tuple[str, ...]] = {
    "stage_ingest": ("data_section",),
    "stage_cells": ("models_section", "tasks_section", "by_model_task_section"),
    "stage_fits": ("effect_section", "diagnostics_section", "fit_section", "curves_section",
                   "points_section", "variance_section", "confounds_section",
                   "mixed_predictive_section", "zoo_section", "headline_sections",
                   "training_section", "contrasts_section",
                   "confidence_calibration_contrasts_section"),
    "stage_frequentist": ("frequentist_section", "crosscheck_section", "sdt_crosscheck_section"),
    "stage_skill": ("skill_section", "confidence_calibration_section", "self_vs_other_section",
                    "missingness_section"),
    "stage_truth": ("truth_section",),
    "stage_robustness": ("hypotheses_section", "sensitivity_section",
                         "operating_characteristics_section", "robustness_checks_section"),
    "stage_power": ("design_sensitivity_section",),
}


def run(
    cfg: RunConfig, *, progress: Progress | None = None, argv: Sequence[str] | None = None
) -> dict[str, Any]:
    """Run the whole pipeline; returns the results dict (also written to OUT/results.json)."""
    say: Progress = progress or (lambda _msg: None)
    t0 = time.perf_counter()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    hypotheses = load_hypotheses(cfg.hypotheses)  # a bad file stops the run before any work
    rule, hypotheses, source = one_rule(hypotheses, cfg.rule, rope_given=cfg.rope_given,
                                        path=cfg.hypotheses)
    cfg = replace(cfg, rule=rule, rule_source=source)
    check_writable(cfg.out)  # a file, under a file, or not writable: one line
    cfg.out.mkdir(parents=True, exist_ok=True)
    inputs = resolve_inputs(cfg.paths, cfg.registry)
    _remove_stale_outputs(cfg.out)
    state = RunState(config=cfg, inputs=inputs, hypotheses=hypotheses)
    state.settings_section = _settings(cfg, inputs)
    with fitpool.workers(cfg.jobs, report=progress_lines.current() is not None):
        for stage in STAGES:
            stage(state, say)
    results = write_results(state)
    effect = state.effect_section or {}
    say(f"scale effect: {effect.get('decision')}  -> {cfg.out / 'results.json'}")
    run_info = _run_info(state, started, argv)
    run_info["seconds_to_results"] = round(time.perf_counter() - t0, 2)
    atomic.write_json(cfg.out / "run.json", run_info)
    if cfg.report:

        say("rendering report")
        render_report(cfg.out, fmt="html", progress=say)
        run_info["seconds_total"] = round(time.perf_counter() - t0, 2)
        atomic.write_json(cfg.out / "run.json", run_info)
    return results


#: Files that describe a finished run: removed when a run starts, written last.
FINAL_OUTPUTS: tuple[str, ...] = ("results.json", "report.html", "report.pdf")


def _remove_stale_outputs(out: Path) -> None:
    """Remove the previous run's results and report before any new output is written.

    After an interruption the folder then never holds a report of other results than the
    files beside it; the run's outputs are complete again once it finishes.
    """
    for name in FINAL_OUTPUTS:
        (out / name).unlink(missing_ok=True)


def load_results(out: Path | str) -> Mapping[str, Any]:
    """Read OUT/results.json (for ``selfmodel report``)."""
    path = Path(out) / "results.json"
    if not path.is_file():
        raise InputError(f"{path}: no results. Run 'selfmodel run --out {out}' first.")
    return json.loads(path.read_text())
