"""What this study could detect (``#sec-detectable``): the design's power, from the fit."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from selfmodel.report.sections.common import PALETTE, Out, Report, esc, num

__all__ = ["power_curve_figure", "sensitivity", "summary"]


def sensitivity(rep: Report) -> dict[str, Any] | None:
    """The power analysis when there is one to show (``design_sensitivity``), else None."""
    S = rep.results.get("design_sensitivity")
    return None if not S or S.get("estimable") is False else S


def summary(rep: Report) -> str:
    """The slope this design detects, what the verdict then means, and items against models."""
    R, EFF, out = rep.results, rep.eff, Out()
    S = R.get("design_sensitivity")
    if S and S.get("estimable") is False:
        return f"No power analysis: {esc(S['reason'])}.\n"
    if not S:
        why = ("no scale model was fitted" if R.get("fit") is None
               else "the power simulation was skipped (`--no-power`)")
        return f"No power analysis: {why}.\n"
    u, D, mde = esc(S["units"]), S["design"], S["mde_80"]
    out(f"Data sets simulated like this one ({D['n_models']} models in {D['n_families']} families, "
        f"{len(D['tasks'])} tasks, the same readable answers per cell and the fitted variance "
        f"components: family {num(D['sigma_family'], '.2f')}, model {num(D['sigma_model'], '.2f')}, "
        f"cell {num(D['sigma_cell'], '.2f')} logits) and judged by the same decision rule show what "
        "this design can detect.\n")
    if mde is not None:
        out(f"- It detects a slope of **{num(mde, '.2f')}** {u} (Monte Carlo ±{num(S['mde_80_mc_se'], '.2f')}) "
            "with 80% probability (`improves`); smaller true slopes are usually missed.")
    else:
        top = max(r["slope"] for r in S["power_curve"])
        out(f"- No slope up to {num(top, '.2f')} {u} is detected with 80% probability.")
    out(f"- The slope's posterior sd is about {num(S['expected_posterior_sd'], '.3f')}. A `practically_null` "
        f"verdict needs the {EFF['hdi_prob']:.0%} HDI inside the ROPE ±{S['rule']['rope']:g}, i.e. a posterior "
        f"sd below about {num(S['sd_needed_for_practically_null'], '.3f')}; when the true slope is 0 this "
        f"design reaches it with probability {num(S['p_practically_null_at_zero'], '.2f')}.")
    if reading := _reading(EFF, S):
        out(reading)
    out(_more_items_or_models(S))
    if S.get("dprime"):
        out(_dprime(S["dprime"]))
    out(f"\n*Method:* each simulated data set is fitted by the fast approximation of the scale model in "
        f"`analysis/power/` (checked against NUTS in `validation/results/power_validation.json`); the d' "
        f"power by the normal approximation of per-cell d' (`analysis/power/dprime.py`); "
        f"{S['sims']} data sets per slope, seed {S['seed']}.\n")
    return str(out)


def _reading(EFF: dict[str, Any], S: dict[str, Any]) -> str:
    """How to read a verdict that shows no size (or a practically null one) given the power."""
    mde, u = S["mde_80"], esc(S["units"])
    if EFF["decision"] in ("no_credible_effect", "credibly_positive") and mde is not None:
        what = ("the sign is credibly positive, but the size is not shown to exceed the ROPE"
                if EFF["decision"] == "credibly_positive" else "the sign is not credible")
        return (f"\n**Reading the verdict.** `{EFF['decision']}` ({what}) is not evidence that the effect is "
                f"small: the data are compatible with slopes up to {num(EFF['hdi_high'], '.2f')} (upper end of the "
                f"HDI), and a true slope below {num(mde, '.2f')} would often give this decision in a study of this size.")
    if EFF["decision"] == "practically_null":
        return (f"\n**Reading the verdict.** The HDI lies inside the ROPE: slopes larger than "
                f"±{S['rule']['rope']:g} {u} are ruled out at the stated HDI probability.")
    return ""


def _more_items_or_models(S: dict[str, Any]) -> str:
    out = Out()
    out(f"\n**More items or more models?** At the fitted variance components the slope's sd is "
        f"{num(S['plugin_sd'], '.3f')}; unlimited items per model and task would bring it only to "
        f"{num(S['plugin_sd_unlimited_items'], '.3f')}. The rest is model-to-model variation, which only "
        "more models (ideally more families) reduce; `selfmodel power` shows by how much.")
    if S.get("variance_components") == "posterior_draws":
        pm_ = S.get("at_posterior_means") or {}
        out(f"\n**Uncertain variance components.** Each simulated data set takes its variance components "
            f"from its own draw of the fit's posterior (the family sd ranged "
            f"{num(S['component_draws']['sigma_family']['q05'], '.2f')} to "
            f"{num(S['component_draws']['sigma_family']['q95'], '.2f')} logits over the draws, 5% to 95%), so "
            "the detectable slope above averages over what the fit does not know about them; with every "
            f"data set at the posterior means it would be {num(pm_.get('mde_80'), '.2f')} {esc(S['units'])}.")
    return str(out).removesuffix("\n")


def _dprime(DP: dict[str, Any]) -> str:
    du, dm = esc(DP.get("units", "")), DP.get("mde_80")
    return (f"\n**Sensitivity (d').** Simulated from the signal-detection fit ({DP['n_models']} models, "
            f"{DP['n_cells']} cells with both outcomes, variance components "
            + ("drawn from its posterior" if DP.get("variance_components") == "posterior_draws"
               else "at their posterior means")
            + (f"), the design detects a d' slope of **{num(dm, '.2f')}** {du}" if dm is not None else
               "), no swept d' slope, up to "
               + num(max((c["slope"] for c in DP.get("power_curve") or []), default=None), ".2f")
               + f" {du}, is detected")
            + f" with 80% probability (posterior sd of the d' slope about "
            f"{num(DP['expected_posterior_sd'], '.3f')}; ROPE ±{DP['rule']['rope']:g}).")


def power_curve_figure(rep: Report) -> Figure | None:
    """P(improves) by true slope, with the 80% line, the detectable slope, the ROPE and this HDI."""
    S, EFF = sensitivity(rep), rep.eff
    if S is None:
        return None
    pc = sorted(S["power_curve"], key=lambda r: r["slope"])
    fig, ax = plt.subplots(figsize=(rep.fig_w, 2.8), layout="constrained")
    rope = S["rule"]["rope"]
    ax.axvspan(-rope, rope, color="0.92", zorder=0)
    xs = [r["slope"] for r in pc]
    ax.errorbar(xs, [r["p_improves"] for r in pc], yerr=[2 * r["se_improves"] for r in pc],
                marker="o", ms=4, capsize=2, color=PALETTE[0], label="P(improves)")
    ax.axhline(S["target_power"], color="0.3", lw=0.8, ls=":")
    if S["mde_80"] is not None:
        ax.axvline(S["mde_80"], color=PALETTE[0], lw=0.8, ls="--")
    if EFF.get("hdi_low") is not None:
        ax.plot([EFF["hdi_low"], EFF["hdi_high"]], [0.02, 0.02], color=PALETTE[1], lw=4,
                solid_capstyle="butt", label=f"this fit's {EFF['hdi_prob']:.0%} HDI")
    left = min(-rope * 1.5, EFF.get("hdi_low") or 0)
    right = max(xs + [EFF.get("hdi_high") or 0])
    span = right - left
    ax.set_xlim(left - 0.04 * span, right + 0.04 * span)  # room for the end markers
    ax.set_ylim(0, 1.06)
    ax.set_xlabel(f"true slope ({S['units']})")
    ax.set_ylabel("probability")
    ax.legend(frameon=False, loc="upper left")
    return fig
