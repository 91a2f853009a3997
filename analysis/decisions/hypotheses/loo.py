"""The LOO comparison of the verdict model with and without the scale term (reads fits; never fits)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selfmodel import models as model_registry
from selfmodel.fitting import checks


def scale_term_loo(
    scale_fit: Any,
    without_fit: Any,
    cells: Any,
    *,
    without_label: str,
    cache_dir: Path | str | None = None,
    max_draws: int | None = 2000,
) -> dict[str, Any]:
    r"""LOO comparison of the verdict model with and without the scale term (no fitting).

    The model without the scale term is the verdict model's declared
    ``SPEC.without_effect`` (for ``scale``: ``pooled(random_effects=True)``, the same task
    intercepts and family, model and cell effects, no :math:`(\beta + \delta_t) x_m`),
    fitted by :func:`selfmodel.robustness.stage.robustness_refits` to the same cells with the same
    sampler settings and seed. PSIS-LOO integrates each cell's own effect out
    (``selfmodel.fitting.checks.loo``).

    Parameters
    ----------
    scale_fit, without_fit
        The ``selfmodel.fitting.sampling.Fit`` of the verdict model and of the model without its effect.
    cells
        The cells both were fitted to.
    without_label
        How ``results.json`` names the model without the effect.
    cache_dir
        The fits folder the LOO results are saved in (``selfmodel.fitting.checks.loo``).
    max_draws
        Posterior draws used for the pointwise log likelihood.

    Returns
    -------
    dict
        ``with_scale`` and ``without_scale`` (``elpd_loo``, ``se``, ``p_loo``,
        ``n_high_k``), ``elpd_diff`` (with minus without; positive favours the scale term),
        ``dse``, ``weights`` (stacking), ``table`` (``selfmodel.fitting.checks.compare`` rows) and
        ``without_scale_diagnostics_passed``.
    """
    l_with = checks.loo(
        scale_fit, model_registry.get(scale_fit.model), cells, max_draws=max_draws,
        cache_dir=cache_dir,
    )
    l_without = checks.loo(
        without_fit, model_registry.get(without_fit.model), cells, max_draws=max_draws,
        cache_dir=cache_dir,
    )
    table = checks.compare({"with_scale": l_with, "without_scale": l_without})
    by = {r["model"]: r for r in table}
    diff = l_with["elpd_loo"] - l_without["elpd_loo"]
    keep = ("elpd_loo", "se", "p_loo", "n_high_k", "max_k", "integrated")
    return {
        "with_scale": {k: l_with[k] for k in keep},
        "without_scale": {k: l_without[k] for k in keep},
        "without_scale_model": without_label,
        "elpd_diff": diff,
        "dse": max(r["dse"] or 0.0 for r in table),
        "weights": {m: by[m]["weight"] for m in by},
        "table": table,
        "without_scale_diagnostics_passed": bool(without_fit.diagnostics["passed"]),
        "without_scale_cache_key": without_fit.provenance.get("cache_key"),
    }
