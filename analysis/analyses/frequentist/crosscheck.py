"""The table of frequentist estimates beside the Bayesian ones, with a verdict per row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

# --------------------------------------------------------------------------- cross-check

#: CI width / HDI width outside this range counts as disagreement about the uncertainty.
WIDTH_RATIO_OK: Final = (0.5, 2.0)

_WHY: Final[dict[str, str]] = {
    "glm_naive": (
        "GLM without cluster effects treats every record as independent evidence about the "
        "slope, though the slope is learned from only {g} models."
    ),
    "glm_cluster": (
        "Cluster-robust (CR1) SEs with {g} clusters are biased downwards and ignore family "
        "grouping; the Bayesian model adds family, model and cell effects and priors."
    ),
    "glm_common": (
        "The common slope weights tasks by their information, whereas the Bayesian beta is the "
        "unweighted mean of the task slopes."
    ),
    "wild": (
        "The wild bootstrap clusters by model but does not model family effects or shrink the "
        "task slopes; with {g} clusters its interval is coarse."
    ),
    "two_stage": (
        "Two-stage treats each model's mean empirical logit as one point (DerSimonian-Laird "
        "between-model variance, Knapp-Hartung SE); no family effects, no partial pooling."
    ),
    "permutation": (
        "The permutation test assumes models are exchangeable under no effect and uses an "
        "unweighted OLS slope; family structure and unequal precision are ignored."
    ),
    "correlation": (
        "A correlation of raw accuracy with log size ignores each model's sampling error and "
        "mixes tasks with different base rates; its p-value is on a different scale."
    ),
    "per_task": (
        "The Bayesian task slopes are partially pooled toward the mean slope; a separate per-task "
        "estimate is not, so it is noisier and can sit far from the pooled value."
    ),
}


def _verdict(lo: float | None, hi: float | None, est: float | None, p: float | None,
             alpha: float) -> str | None:
    """'positive', 'negative' or 'unclear' from an interval (or a p-value and sign)."""
    if lo is not None and hi is not None:
        return "positive" if lo > 0 else "negative" if hi < 0 else "unclear"
    if p is not None and est is not None:
        if p < alpha:
            return "positive" if est > 0 else "negative"
        return "unclear"
    return None


def _row(
    effect: str, method: str, key: str, freq: Mapping[str, Any] | None, bayes: Mapping[str, Any],
    *, level: float, on_scale: bool, g: int, estimate_key: str = "estimate",
    p_key: str = "p_value", p_holm: float | None = None,
) -> dict[str, Any]:
    freq = freq or {}
    est = freq.get(estimate_key)
    lo, hi, p = freq.get("ci_low"), freq.get("ci_high"), freq.get(p_key)
    b_mean, b_lo, b_hi = bayes.get("mean"), bayes.get("hdi_low"), bayes.get("hdi_high")
    hdi_prob = bayes.get("hdi_prob")
    row: dict[str, Any] = {
        "effect": effect, "method": method,
        "scale": "slope (logits)" if on_scale else "correlation",
        "estimate": est, "ci_low": lo if on_scale else None, "ci_high": hi if on_scale else None,
        "p_value": p, "p_holm": p_holm, "level": level,
        "bayes_mean": b_mean, "bayes_hdi_low": b_lo, "bayes_hdi_high": b_hi,
        "bayes_hdi_prob": hdi_prob,
        "width_ratio": None, "agrees": None, "note": None,
    }
    if est is None:
        row["note"] = freq.get("reason") or "frequentist estimate not available"
        return row
    if b_mean is None or b_lo is None or b_hi is None:
        row["note"] = "Bayesian effect not estimable"
        return row
    alpha = 1 - level
    fv = _verdict(lo if on_scale else None, hi if on_scale else None, est, p, alpha)
    bv = "positive" if b_lo > 0 else "negative" if b_hi < 0 else "unclear"
    reasons = []
    if fv != bv:
        reasons.append(f"sign verdict differs (frequentist: {fv}; Bayesian: {bv})")
    if on_scale and not (b_lo <= est <= b_hi):
        reasons.append(f"estimate {est:.3f} lies outside the HDI [{b_lo:.3f}, {b_hi:.3f}]")
    ratio = None
    if on_scale and lo is not None and hi is not None and b_hi > b_lo:
        ratio = (hi - lo) / (b_hi - b_lo)
        row["width_ratio"] = ratio
    if ratio is not None and not WIDTH_RATIO_OK[0] <= ratio <= WIDTH_RATIO_OK[1]:
        rtxt = f"{1 / ratio:.1f}x narrower" if ratio < 1 else f"{ratio:.1f}x wider"
        reasons.append(f"{level:.0%} CI {rtxt} than the {hdi_prob:.0%} HDI")
    row["agrees"] = not reasons
    if reasons:
        row["note"] = "; ".join(reasons) + ". " + _WHY[key].format(g=g)
    return row


def _subset(section: Mapping[str, Any], freq: Mapping[str, Any]) -> str:
    """Method-name suffix when a pooled per-model analysis used fewer tasks or models."""
    parts = []
    used = section.get("tasks_used")
    if used is not None and list(used) != list(freq.get("tasks", used)):
        parts.append("tasks: " + ", ".join(used))
    if section.get("tasks_excluded"):
        parts.append("tasks left out: " + ", ".join(section["tasks_excluded"]))
    if section.get("models_dropped"):
        parts.append("models dropped: " + ", ".join(section["models_dropped"]))
    return f" [{'; '.join(parts)}]" if parts else ""


def part(section: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``section[key]``, or the section's reason when it (or the part) is not estimable."""
    value = section.get(key)
    if isinstance(value, Mapping):
        return value
    return {"reason": section.get("reason") or "frequentist estimate not available"}


def crosscheck_table(
    freq: Mapping[str, Any], bayes_effect: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Each frequentist estimate beside the Bayesian one, with ``agrees`` and a ``note``.

    Parameters
    ----------
    freq
        Output of :func:`run_frequentist`.
    bayes_effect
        ``results.json``'s ``scale_effect`` (``mean``, ``hdi_low``, ``hdi_high``,
        ``hdi_prob``, ``per_task``).

    Returns
    -------
    list of dict
        ``effect`` (``"overall"`` or a task), ``method``, ``scale``, ``estimate``,
        ``ci_low``, ``ci_high``, ``p_value``, ``p_holm`` (per-task rows), ``level``,
        ``bayes_mean``, ``bayes_hdi_low``, ``bayes_hdi_high``, ``bayes_hdi_prob``,
        ``width_ratio`` (CI width / HDI width), ``agrees`` and ``note``.

        ``agrees`` is True when (a) both reach the same sign verdict (interval above 0,
        below 0, or covering 0; for rows without an interval: ``p < 1 - level`` and the
        sign), (b) for slope rows, the frequentist estimate lies inside the HDI, and (c) the
        interval is neither more than 2x narrower nor 2x wider than the HDI
        (``WIDTH_RATIO_OK``). ``note`` (None when they agree) says which failed and the
        likely reason. The frequentist ``level`` and the HDI probability may differ (e.g.
        95% vs 94%); the width ratio is not adjusted for that.
    """
    if not freq.get("estimable", False):
        return [{"effect": "overall", "method": "all", "agrees": None,
                 "note": f"frequentist checks not run: {freq.get('reason', 'not estimable')}"}]
    level = float(freq["level"])
    g = int(freq["n_models"])
    b_all = dict(bayes_effect)
    b_tasks: Mapping[str, Any] = bayes_effect.get("per_task", {}) or {}
    glm_t, glm_c = freq["glm_task_slopes"], freq["glm_common"]
    wild, two = freq["wild_bootstrap"], freq["two_stage"]
    perm, corr = freq["permutation"], freq["correlations"]
    kw: dict[str, Any] = {"level": level, "g": g}

    two_pooled, perm_pooled = part(two, "pooled"), part(perm, "pooled")
    corr_pooled = part(corr, "pooled")
    wild_name = wild.get("weights") or "not run"
    rows = [
        _row("overall", "GLM task slopes (mean), cluster-robust SE" + _subset(glm_t, freq),
             "glm_cluster", part(glm_t, "slope"), b_all, on_scale=True, **kw),
        _row("overall", "GLM task slopes (mean), model-based SE (records independent)"
             + _subset(glm_t, freq), "glm_naive", part(glm_t, "slope_naive"), b_all,
             on_scale=True, **kw),
        _row("overall", f"wild cluster score bootstrap ({wild_name})" + _subset(wild, freq),
             "wild", part(wild, "slope"), b_all, on_scale=True, **kw),
        _row("overall", "GLM common slope, cluster-robust SE", "glm_common",
             part(glm_c, "slope"), b_all, on_scale=True, **kw),
        _row("overall", "two-stage WLS (model mean logit on x)" + _subset(two_pooled, freq),
             "two_stage", part(two_pooled, "slope"), b_all, on_scale=True, **kw),
        _row("overall", "permutation test of OLS slope (sizes permuted)"
             + _subset(perm_pooled, freq), "permutation",
             {"estimate": perm_pooled.get("statistic"),
              "p_value": perm_pooled.get("p_value"), "reason": perm_pooled.get("reason")},
             b_all, on_scale=True, **kw),
        _row("overall", "Pearson r (accuracy vs log size)", "correlation",
             {"estimate": corr_pooled.get("pearson_r"), "p_value": corr_pooled.get("pearson_p"),
              "reason": corr_pooled.get("reason")},
             b_all, on_scale=False, **kw),
        _row("overall", "Spearman rho (accuracy vs log size)", "correlation",
             {"estimate": corr_pooled.get("spearman_rho"),
              "p_value": corr_pooled.get("spearman_p"), "reason": corr_pooled.get("reason")},
             b_all, on_scale=False, **kw),
    ]
    holm_adj = freq["holm"]
    tasks = sorted(glm_t.get("per_task") or {}) or list(freq.get("tasks") or [])
    for t in tasks:
        bt = dict(b_tasks.get(t, {}))
        rows.append(_row(t, "GLM task slope, cluster-robust SE", "per_task",
                         part(part(glm_t, "per_task"), t), bt, on_scale=True,
                         p_holm=holm_adj["glm_cluster"].get(t), **kw))
        rows.append(_row(t, f"wild cluster score bootstrap ({wild_name})", "per_task",
                         part(part(wild, "per_task"), t), bt, on_scale=True,
                         p_holm=holm_adj["wild_bootstrap"].get(t), **kw))
        two_t = part(part(two, "per_task"), t)
        rows.append(_row(t, "two-stage WLS (cell logit on x)", "per_task",
                         part(two_t, "slope"), bt, on_scale=True, **kw))
        pt = part(part(perm, "per_task"), t)
        rows.append(_row(t, "permutation test of OLS slope (sizes permuted)", "per_task",
                         {"estimate": pt.get("statistic"), "p_value": pt.get("p_value"),
                          "reason": pt.get("reason")}, bt,
                         on_scale=True, p_holm=holm_adj["permutation"].get(t), **kw))
    return rows
