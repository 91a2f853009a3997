"""A methods paragraph generated from what was actually fitted.

The text is assembled from ``results.json`` (the fit's provenance: priors, sampler settings,
seed, versions; the decision rule; the diagnostics thresholds), so it cannot disagree with the
run. The report prints it for pasting into a paper.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_DIST = {
    "Normal": "normal",
    "HalfNormal": "half-normal",
    "StudentT": "Student-t",
    "Exponential": "exponential",
}
_PARAM_TEXT = {
    "alpha": "task intercepts",
    "beta": "the scale slope",
    "sigma_delta": "the spread of task slopes",
    "sigma_family": "the family-intercept SD",
    "sigma_model": "the model-intercept SD",
    "sigma_cell": "the model-by-task SD",
    "sigma_family_slope": "the family-slope SD",
}


def _prior(dist: str, params: Mapping[str, float]) -> str:
    args = ", ".join(f"{k} = {v:g}" for k, v in params.items())
    return f"{_DIST.get(dist, dist)}({args})"


def fitted_priors(fit: Mapping[str, Any]) -> dict[str, Any]:
    """The priors of the variables the fitted model has (its ``declaration``; else as saved)."""
    decl = fit.get("declaration") or {}
    return dict(decl.get("priors") or fit.get("priors") or {})


def prior_rows(fit: Mapping[str, Any]) -> list[list[str]]:
    """Rows ``[parameter, prior]`` of the report's table of priors as fitted."""
    return [[f"`{k}`", f"{v[0]}({', '.join(f'{a}={b:g}' for a, b in v[1].items())})"]
            for k, v in fitted_priors(fit).items()]


def model_markdown(fit: Mapping[str, Any]) -> str:
    r"""The report's model text: the fitted model's equations and prose (its declaration).

    Examples
    --------
    >>> fit = {"model": "scale", "declaration": {"equations": r"y &= a", "prose": "with a.",
    ...        "source": "selfmodel.models.scale.declaration", "options": {}}}
    >>> print(model_markdown(fit))
    The fitted model `scale` (from `selfmodel.models.scale.declaration`, with the options it was fitted with):
    <BLANKLINE>
    $$
    \begin{aligned}
    y &= a
    \end{aligned}
    $$
    <BLANKLINE>
    with a.
    """
    decl = fit.get("declaration") or {}
    head = (f"The fitted model `{fit.get('model')}` (from `{decl.get('source', 'its provenance')}`, "
            "with the options it was fitted with)")
    if not decl.get("equations"):
        return f"{head}: {decl.get('prose') or ''}"
    return (f"{head}:\n\n$$\n\\begin{{aligned}}\n{decl['equations']}\n\\end{{aligned}}\n$$\n\n"
            f"{decl.get('prose') or ''}")


def methods_text(results: Mapping[str, Any]) -> str:
    """Return a methods paragraph (Markdown) for the fitted scale model.

    Examples
    --------
    >>> r = {"scale_effect": {"decision": "not_estimable", "reason": "no sizes",
    ...      "scale_variable": "params", "registry_column": "params_b"},
    ...      "data": {"records_used": 10, "models": ["a"], "tasks": ["t"]}, "fit": None}
    >>> "not estimated" in methods_text(r)
    True
    """
    eff = results["scale_effect"]
    data = results["data"]
    fit = results.get("fit")
    n_models = len(data.get("models") or [])
    n_tasks = len(data.get("tasks") or [])
    head = (
        f"We analysed {data['records_used']} self-predictions from {n_models} models on {n_tasks} "
        f"task{'s' if n_tasks != 1 else ''} with selfmodel."
    )
    if not fit:
        return head + (f" The scale effect was not estimated: {eff.get('reason', 'no fit')}.")
    scale_desc = {
        "params": "log10 of total parameters (billions)",
        "active_params": "log10 of active parameters (billions)",
        "capability": "the capability score",
    }[eff["scale_variable"]]
    priors = "; ".join(
        f"{_PARAM_TEXT.get(k, k)} ~ {_prior(v[0], v[1])}" for k, v in fitted_priors(fit).items()
    )
    s = fit["sampler"]
    excluded = eff.get("models_without_scale_variable") or []
    excl = (
        f" {len(excluded)} model{'s' if len(excluded) != 1 else ''} without a value of the scale "
        f"variable ({', '.join(excluded)}) contributed to the descriptive analyses only."
        if excluded
        else ""
    )
    d = results.get("diagnostics", {})
    th = d.get("thresholds", {})
    versions = fit.get("versions", {})
    own = "slope_task" in fitted_priors(fit)
    slopes = (
        "a slope per task on the centred scale variable "
        f"({scale_desc}), each with its own prior (no spread shared between tasks), whose "
        "average over tasks is the scale effect, and "
        if own
        else "a slope on the centred scale variable "
        f"({scale_desc}) with partially pooled task-specific deviations that sum to zero, and "
    )
    meaning = eff.get("meaning")
    return (
        f"{head} Correct self-predictions were aggregated to binomial counts per model and task "
        f"(unreadable predictions excluded; {fit.get('cells', 'all')} cells) and modelled with a "
        "hierarchical logistic regression: task intercepts, "
        + slopes
        + "zero-sum non-centred family and model intercepts plus model-by-task effects, so that models, "
        f"not records, carry the evidence about scale. Of the models, {eff['n_models']} had the "
        f"scale variable.{excl} Priors: {priors}. We sampled with {s['sampler']} (NUTS; "
        f"{s['chains']} chains of {s['draws']} draws after {s['tune']} tuning steps, target "
        f"acceptance {s['target_accept']}, seed {fit['seed']}) using PyMC {versions.get('pymc', '?')}. "
        f"Convergence required R-hat <= {th.get('r_hat', 1.01)}, bulk ESS >= "
        f"{th.get('ess_bulk', 400):.0f}, no divergent transitions and E-BFMI >= {th.get('bfmi', 0.3)}; "
        f"{'all were met' if d.get('passed') else 'these were NOT all met, so the verdict is not a finding'} "
        f"(max R-hat {d.get('max_rhat')}, min bulk ESS {d.get('min_ess_bulk')}, "
        f"{d.get('divergences')} divergences). Decision rule, declared before fitting: "
        f"{eff['rule']} The slope was {eff['mean']:.3f} {eff['units']} "
        f"({eff['hdi_prob']:.0%} HDI {eff['hdi_low']:.3f} to {eff['hdi_high']:.3f}; "
        f"P(slope > 0) = {eff['prob_positive']:.3f}), decision: {eff['decision'].replace('_', ' ')}"
        + (f" ({meaning})." if meaning else ".")
        + _robustness_text(results)
    )


def _holds(fam: Mapping[str, Any] | None, what: str) -> str | None:
    if not fam or fam.get("verdict_holds") is None:
        return None
    part = "its direction " if fam.get("compared_on") == "direction" else ""
    if fam["verdict_holds"]:
        return f"{part}held {what}"
    return f"{part}changed {what} ({', '.join(fam.get('changed') or [])})"


def _robustness_text(results: Mapping[str, Any]) -> str:
    """Sentences on the SDT model, the declared hypotheses and the sensitivity refits (if run)."""
    out = ""
    sdt = results.get("sdt_effect")
    if sdt:
        sens = sdt["sensitivity"]
        if sens.get("mean") is not None:
            out += (
                " Sensitivity (d') and response criterion were modelled with a hierarchical "
                "equal-variance signal-detection model (probit link; hits and false alarms per cell, "
                "the same group structure and, for each of d' and the criterion, a slope per task "
                "with its own prior); the d' slope averaged over tasks was "
                f"{sens['mean']:.3f} ({sens['hdi_prob']:.0%} HDI {sens['hdi_low']:.3f} to "
                f"{sens['hdi_high']:.3f}), decision: {sens['decision'].replace('_', ' ')}"
                + ("" if sdt.get("finding") else " (its diagnostics failed: not a finding)")
                + "."
            )
    hyp = results.get("hypotheses")
    if hyp:
        n = len(hyp.get("declared") or [])
        out += (
            f" {n} hypotheses were declared before fitting in {hyp['file']} (SHA-256 "
            f"{hyp['sha256'][:12]}) and evaluated with their own ROPE rules and Savage-Dickey "
            "Bayes factors"
        )
        loo = hyp.get("scale_term_loo")
        if loo and loo.get("elpd_diff") is not None:
            out += (
                "; PSIS-LOO (cell effects integrated out) compared the model with one without the "
                f"scale term: ELPD difference {loo['elpd_diff']:.1f} (SE {loo['dse']:.1f})"
            )
        out += "."
    sens = results.get("sensitivity") or {}
    parts = [
        t
        for t in (
            _holds(sens.get("priors"), "with every prior scale halved and doubled"),
            _holds(sens.get("scale_variable"), "with the other scale variables"),
        )
        if t
    ]
    if parts:
        out += " The overall verdict " + " and ".join(parts) + "."
    return out
