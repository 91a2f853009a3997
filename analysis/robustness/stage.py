"""The robustness stage: declared hypotheses, the scale-term LOO, sensitivity refits, the operating characteristics.

Called by :func:`selfmodel.pipeline.stages.run` after the model zoo is fitted. Everything here either
reads existing fits (hypotheses, Savage-Dickey Bayes factors) or refits through
:func:`selfmodel.fitting.sampling.fit`, so every refit has its own cache entry and an unchanged second
run reuses them all. The results land in ``results.json`` as ``hypotheses``, ``sensitivity``
and ``operating_characteristics`` (the shipped study of ``validation/operating_characteristics.py``,
package data ``analysis/data/operating_characteristics.json``); ``docs/results.md`` lists
what each holds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from selfmodel import models as model_registry
from selfmodel.analyses.model_inputs import models_per_task
from selfmodel.common import atomic
from selfmodel.common.jsonable import rounded
from selfmodel.common.paths import PACKAGE_DATA, REPO_ROOT
from selfmodel.decisions.effects import rope_for, x_by_model
from selfmodel.decisions.hypotheses import (
    DecisionRule,
    Evidence,
    Hypothesis,
    evaluate_all,
    file_sha256,
    scale_term_loo,
)
from selfmodel.fitting.fitpool import concurrently
from selfmodel.fitting.fitter import Fitter
from selfmodel.fitting.sampling import Fit
from selfmodel.robustness.sensitivity import prior_sensitivity, scale_variable_sensitivity

#: The committed operating-characteristics study (``validation/operating_characteristics.py`` writes it).
OPERATING_CHARACTERISTICS_JSON = REPO_ROOT / "validation" / "results" / "operating_characteristics.json"
#: Its summary shipped with the package (``validation/operating_characteristics.py --ship`` writes it).
OPERATING_CHARACTERISTICS_PACKAGE_DATA = PACKAGE_DATA / "operating_characteristics.json"


def evidence_from(
    fits: Mapping[str, Fit], data_for: Mapping[str, pl.DataFrame], not_fitted: Mapping[str, str]
) -> dict[str, Evidence | str]:
    """The fitted models as :func:`~selfmodel.decisions.hypotheses.evaluate_all` wants them.

    Parameters
    ----------
    fits
        Model name -> its fit.
    data_for
        Model name -> the table it was fitted to (for the number of models, overall and
        per task).
    not_fitted
        Model name -> why it was not fitted (shown as the hypothesis' reason).
    """
    out: dict[str, Evidence | str] = dict(not_fitted)
    for name, f in fits.items():
        data = data_for[name]
        out[name] = Evidence(
            idata=f.idata,
            n_models=data["model"].n_unique(),
            models_per_label=models_per_task(data),
            diagnostics_passed=bool(f.diagnostics.get("passed")),
        )
    return out


def hypotheses_section(
    hypotheses: list[Hypothesis], path: Path, evidence: Mapping[str, Evidence | str]
) -> dict[str, Any]:
    """``results["hypotheses"]`` without the LOO part: the file and one row per parameter."""
    rows = evaluate_all(hypotheses, evidence)
    return {
        "file": str(path),
        "sha256": file_sha256(path),
        "declared": [h.as_dict() for h in hypotheses],
        "rows": rows,
        "scale_term_loo": None,
    }


def fit_without_effect(
    main: Fit,
    cells: pl.DataFrame,
    *,
    fitter: Fitter,
) -> tuple[Fit, str]:
    """Fit the verdict model's declared ``SPEC.without_effect`` to its cells.

    Returns the fit and the label ``results.json`` gives it (``fitter``: the same sampler
    settings and seed as the main fit; its own cache entry).
    """
    comparison = model_registry.get(main.model).SPEC.without_effect
    if comparison is None:
        raise ValueError(f"model '{main.model}' declares no model without its effect")
    f = fitter.fit(comparison.model, cells, options=dict(comparison.options))
    return f, comparison.label or comparison.model


def robustness_refits(
    *,
    main: Fit,
    usable: pl.DataFrame,
    records: pl.DataFrame,
    registry: pl.DataFrame | None,
    scale: str,
    rule: DecisionRule,
    fitter: Fitter,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The LOO comparison without the scale term, and the two sensitivity refit families.

    Every refit is made by ``fitter`` (the main fit's seed and sampler settings, the run's
    fit cache, which also keeps the LOO results, and its progress line).

    Returns
    -------
    (scale_term_loo, sensitivity)
        As :func:`~selfmodel.decisions.hypotheses.scale_term_loo` returns, and
        ``{"priors": ..., "scale_variable": ...}``.
    """
    per_task = models_per_task(usable)

    def loo_without_effect() -> dict[str, Any]:
        fitter.progress("LOO with and without the scale term (fitting pooled with random effects)")
        without, label = fit_without_effect(main, usable, fitter=fitter)
        return scale_term_loo(main, without, usable, without_label=label,
                              cache_dir=fitter.cache_dir)

    main_rule, _ = rope_for(rule, scale, x_by_model(usable))
    # the three are independent: with worker processes their fits run at once (selfmodel.fitting.fitpool)
    loo, priors, variables = concurrently(
        loo_without_effect,
        lambda: prior_sensitivity(
            usable,
            fitter=fitter,
            model=main.model,
            rule=main_rule,
            main=main,
            models_per_task=per_task,
        ),
        lambda: scale_variable_sensitivity(
            records,
            registry,
            fitter=fitter,
            main_scale=scale,
            rule=rule,
            main=main,
        ),
    )
    return loo, {"priors": priors, "scale_variable": variables}


_ARM_KEYS = (
    "arm",
    "model",
    "effect",
    "generator",
    "null",
    "n_fits",
    "n_models",
    "cells",
    "coverage50",
    "coverage90",
    "coverage50_passed",
    "coverage90_passed",
    "improves_rate",
    "any_task_improves_rate",
    "task_improves_rate",
    "task_coverage50",
    "task_coverage90",
    "null_check",
    "rank_histogram",
    "task_rank_histogram",
    "rmse",
    "mean_posterior_sd",
    "n_passed_diagnostics",
    "fits_with_divergences",
    "sampler",
    "decisions",
    "median_seconds_per_fit",
)


def summarise_operating_characteristics(path: Path = OPERATING_CHARACTERISTICS_JSON) -> dict[str, Any] | None:
    """The committed operating-characteristics study, summarised for ``results.json``.

    Returns ``None`` when the file is absent. The per-fit columns are left out (they stay
    in the file); the SHA-256 of the file ties the report's table to it.
    """
    if not path.is_file():
        return None
    raw = json.loads(path.read_text())
    arms = [{k: a.get(k) for k in _ARM_KEYS} for a in raw.get("arms", [])]
    try:
        shown = str(path.relative_to(REPO_ROOT))
    except ValueError:
        shown = str(path)
    return {
        "file": shown,
        "sha256": file_sha256(path),
        "command": raw.get("command"),
        "generated_utc": raw.get("generated_utc"),
        "complete": raw.get("complete"),
        "sims_per_arm": raw.get("sims_per_arm"),
        "seed": raw.get("seed"),
        "rule": raw.get("rule"),
        "levels": raw.get("levels"),
        "rank_draws": raw.get("rank_draws"),
        "versions": raw.get("versions"),
        "simuk": raw.get("simuk"),
        "arms": arms,
    }


def write_operating_characteristics_package_data(
    source: Path = OPERATING_CHARACTERISTICS_JSON, target: Path = OPERATING_CHARACTERISTICS_PACKAGE_DATA
) -> dict[str, Any]:
    """Write the summary of ``source`` as the package data :func:`operating_characteristics` reads."""
    summary = summarise_operating_characteristics(source)
    if summary is None:
        raise FileNotFoundError(f"{source}: no operating-characteristics study; run validation/operating_characteristics.py")
    atomic.write_json(target, rounded(summary))
    return summary


#: The operating characteristics of this analysis at the pipeline's settings, merged and shipped by
#: ``validation/pipeline_operating_characteristics.py --ship`` (possibly partial: each arm says its n).
PIPELINE_OPERATING_CHARACTERISTICS_PACKAGE_DATA = PACKAGE_DATA / "pipeline_operating_characteristics.json"


def operating_characteristics(
    path: Path = OPERATING_CHARACTERISTICS_PACKAGE_DATA, pipeline: Path = PIPELINE_OPERATING_CHARACTERISTICS_PACKAGE_DATA
) -> dict[str, Any] | None:
    """The operating characteristics' summary shipped with the package (``None`` when absent).

    ``pipeline`` holds the summary of the pipeline-settings study when it is shipped
    (``None`` otherwise).
    """
    if not path.is_file():
        return None
    out: dict[str, Any] = json.loads(path.read_text())
    out["pipeline"] = json.loads(pipeline.read_text()) if pipeline.is_file() else None
    return out
