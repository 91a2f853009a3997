"""Confounds of the scale axis: families and mixture-of-experts sizes (the ``confounds`` section).

Scale is not assigned at random: the models at one end of the axis can all come from one
family, and a mixture-of-experts model has a total size far above the parameters it uses
per token. :func:`scale_axis_confounds` describes both from the cells of the verdict fit
(no fitting); :func:`without_family` refits the verdict model without the family with the
most models (leave-one-family-out), so the report can say whether the slope rests on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from selfmodel import models as model_registry
from selfmodel.common import arviz_ops
from selfmodel.decisions.effects import rope_for, x_by_model
from selfmodel.decisions.hypotheses import DecisionRule, decide
from selfmodel.fitting.fitter import Fitter

Progress = Callable[[str], None]


def _value_text(row: dict[str, Any], scale: str) -> str:
    if scale == "params":
        return f"{row['params_b']:g} B total parameters"
    if scale == "active_params":
        return f"{row['active_params_b']:g} B active parameters"
    return f"capability {row['capability']:.3g}"


def scale_axis_confounds(usable: pl.DataFrame, scale: str) -> dict[str, Any] | None:
    """Who holds the top of the scale axis, each family's share of the range, MoE sizes.

    Parameters
    ----------
    usable
        The verdict fit's cells (``model``, ``family``, ``x`` and the registry columns).
    scale
        The scale variable (``params``, ``active_params``, ``capability``).

    Returns
    -------
    dict or None
        ``top`` (the models at the largest value: ``n_models``, ``families``,
        ``one_family``, ``family``, ``value_text``), ``family_share`` (family -> span of its
        models over the span of all models), ``largest_share`` (the family with the
        largest share), ``largest_family`` (most models; ties by share) and
        ``mixture_of_experts`` (models whose active size is below their total size, with
        both ranges). ``None`` without at least two distinct values.
    """
    if usable.height == 0 or "x" not in usable.columns:
        return None
    cols = [c for c in ("model", "family", "x", "params_b", "active_params_b", "capability")
            if c in usable.columns]
    m = usable.select(cols).unique(subset=["model"]).sort("model")
    xs = m["x"].to_list()
    lo, hi = min(xs), max(xs)
    span = hi - lo
    if not span > 0:
        return None
    rows = m.to_dicts()
    top_rows = [r for r in rows if r["x"] >= hi - 1e-9 * max(1.0, abs(hi))]
    fams = sorted({r["family"] for r in top_rows})
    top = {
        "n_models": len(top_rows),
        "models": sorted(r["model"] for r in top_rows),
        "families": fams,
        "one_family": len(fams) == 1,
        "family": fams[0] if len(fams) == 1 else None,
        "value_text": _value_text(top_rows[0], scale),
    }
    share: dict[str, float] = {}
    count: dict[str, int] = {}
    for f in sorted({r["family"] for r in rows}):
        fx = [r["x"] for r in rows if r["family"] == f]
        share[f] = (max(fx) - min(fx)) / span
        count[f] = len(fx)
    best = max(share, key=lambda f: (share[f], f))
    largest = max(count, key=lambda f: (count[f], share[f], f))
    moe_rows = [r for r in rows if r.get("active_params_b") is not None and r.get("params_b") is not None
                and r["active_params_b"] < r["params_b"]]
    moe = {
        "models": sorted(r["model"] for r in moe_rows),
        "active_range_text": (f"{min(r['active_params_b'] for r in moe_rows):g}-"
                              f"{max(r['active_params_b'] for r in moe_rows):g} B") if moe_rows else None,
        "total_range_text": (f"{min(r['params_b'] for r in moe_rows):g}-"
                             f"{max(r['params_b'] for r in moe_rows):g} B") if moe_rows else None,
    }
    return {
        "scale_variable": scale,
        "n_models": len(rows),
        "top": top,
        "family_share": share,
        "family_models": count,
        "largest_share": {"family": best, "share": share[best]},
        "largest_family": largest,
        "mixture_of_experts": moe,
    }


def without_family(
    usable: pl.DataFrame,
    family: str,
    *,
    scale: str,
    rule: DecisionRule,
    fitter: Fitter,
) -> dict[str, Any]:
    """The verdict model refitted without ``family``: the slope's decision on the rest."""
    rest = usable.filter(pl.col("family") != family)
    n_models = rest["model"].n_unique()
    head = {"family": family, "n_models": n_models}
    if n_models < rule.min_models or rest["x"].n_unique() < 2:
        return {**head, "decision": "not_estimable", "mean": None,
                "reason": f"only {n_models} model(s) without the {family} family"}
    module = model_registry.verdict()
    f = fitter.fit(module.NAME, rest, why=(
        f"leave-one-family-out: fitting '{module.NAME}' without {family} ({n_models} models)"))
    eff_rule, _ = rope_for(rule, scale, x_by_model(rest))
    res = decide(arviz_ops.posterior(f.idata)[module.EFFECT].values, eff_rule, n_models=n_models)
    return {**head, **{k: res[k] for k in ("mean", "sd", "hdi_low", "hdi_high", "hdi_prob",
                                          "prob_positive", "decision", "meaning")},
            "diagnostics_passed": bool(f.diagnostics.get("passed"))}
