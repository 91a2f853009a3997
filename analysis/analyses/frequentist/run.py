"""All cross-checks of a run with Holm's adjustment (``run_frequentist``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import polars as pl

from selfmodel.analyses.frequentist.glm import (
    DEFAULT_LEVEL,
    finite_or_none,
    glm_slope,
    guarded,
    not_estimable,
    usable_cells,
)
from selfmodel.analyses.frequentist.permutation import correlations, permutation_test
from selfmodel.analyses.frequentist.two_stage import two_stage
from selfmodel.analyses.frequentist.wild_bootstrap import Weights, wild_bootstrap
from selfmodel.records.contract import SCALE_EXCLUSION_REASON

# --------------------------------------------------------------------------- Holm


def holm(pvalues: Mapping[str, float | None]) -> dict[str, float | None]:
    """Holm step-down adjusted p-values; ``None`` entries stay ``None`` and do not count.

    Examples
    --------
    >>> holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": None})
    {'a': 0.03, 'b': 0.06, 'c': 0.06, 'd': None}
    """
    valid = sorted(((p, k) for k, p in pvalues.items() if p is not None), key=lambda pk: pk[0])
    m = len(valid)
    adjusted: dict[str, float | None] = {}
    running = 0.0
    for i, (p, key) in enumerate(valid):
        running = max(running, min(1.0, (m - i) * p))
        adjusted[key] = running
    return {k: (finite_or_none(adjusted[k]) if k in adjusted else None) for k in pvalues}


# --------------------------------------------------------------------------- entry point


def run_frequentist(
    cells: pl.DataFrame,
    *,
    seed: int,
    level: float = DEFAULT_LEVEL,
    weights: Weights = "auto",
    reps: int = 9999,
    permutations: int = 2000,
    exact_max_models: int = 8,
    derived: Collection[str] = (),
) -> dict[str, Any]:
    """All frequentist cross-checks of the scale effect.

    Parameters
    ----------
    cells
        Cells of :func:`selfmodel.records.cells.build_cells`.
    seed
        Seed of the bootstrap weights and permutations.
    level
        Confidence level of every interval.
    weights, reps
        Wild bootstrap weights and replicates (see :func:`wild_bootstrap`).
    permutations, exact_max_models
        Permutation test settings (see :func:`permutation_test`).
    derived
        Derived checkpoints (registry ``base_model``; :func:`selfmodel.records.cells.derived_models`).
        Their cells have no ``x`` either, but they are listed apart, with the reason, in
        ``excluded_derived_checkpoints`` instead of ``models_without_scale_variable``.

    Returns
    -------
    dict
        ``estimable``, ``level``, ``seed``, ``n_models``, ``n_cells``,
        ``models_without_scale_variable``, ``excluded_derived_checkpoints`` (when any
        derived checkpoint is in the cells), ``glm_common``, ``glm_task_slopes``,
        ``wild_bootstrap``, ``two_stage``, ``correlations``, ``permutation`` and ``holm``
        (Holm-adjusted per-task p-values of the cluster-robust GLM, the wild bootstrap and
        the permutation test).
    """
    use, left_out = usable_cells(cells)
    skipped = sorted(set(derived) & set(left_out))
    left_out = [m for m in left_out if m not in set(skipped)]
    base: dict[str, Any] = {
        "level": level,
        "seed": seed,
        "n_models": int(use["model"].n_unique()),
        "n_cells": int(use.height),
        "models_without_scale_variable": left_out,
        "tasks": sorted(use["task"].unique().to_list()),
    }
    if skipped:
        base["excluded_derived_checkpoints"] = {"models": skipped, "reason": SCALE_EXCLUSION_REASON}
    reason = not_estimable(use)
    if reason:
        return {**base, "estimable": False, "reason": reason}
    glm_t = guarded("the GLM with task slopes", glm_slope, use, task_slopes=True, level=level)
    wild = guarded("the wild cluster bootstrap", wild_bootstrap, use, seed=seed,
                    task_slopes=True, weights=weights, reps=reps, level=level)
    perm = guarded("the permutation test", permutation_test, use, seed=seed,
                    permutations=permutations, exact_max_models=exact_max_models)

    def task_p(section: Mapping[str, Any], key: str | None = None) -> dict[str, float | None]:
        per_task = section.get("per_task") or {}
        return {t: (r.get(key, {}) if key else r).get("p_value") for t, r in per_task.items()}

    return {
        **base,
        "estimable": True,
        "glm_common": guarded("the GLM with a common slope", glm_slope, use, task_slopes=False,
                               level=level),
        "glm_task_slopes": glm_t,
        "wild_bootstrap": wild,
        "two_stage": guarded("the two-stage WLS", two_stage, use, level=level),
        "correlations": guarded("the correlations", correlations, use),
        "permutation": perm,
        "holm": {
            "family": "per-task slope tests (H0: slope_t = 0), one family per method",
            "glm_cluster": holm(task_p(glm_t)),
            "wild_bootstrap": holm(task_p(wild)),
            "permutation": holm(task_p(perm)),
        },
    }
