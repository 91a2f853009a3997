"""What this study could detect (``#sec-detectable``): the design's power, from the fit."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from selfmodel.report.sections.common import PALETTE, Out, Report, esc, num

__all__ = ["power_curve_figure", "sensitivity", "summary"]


def sensitivity(rep: Report) -> dict[str, Any] | None:
    """The power analysis when there is one to show (``design_sensitivity``), else None."""
    design_sensitivity = rep.results.get("design_sensitivity")
    return None if not design_sensitivity or design_sensitivity.get("estimable") is False else design_sensitivity


def summary(rep: Report) -> str:
    """The slope this design detects, what the verdict then means, and items against models."""
    results, effect, out = rep.results, rep.eff, Out()
    design_sensitivity = results.get("design_sensitivity")
    if design_sensitivity and design_sensitivity.get("estimable") is False:
        return f"No power analysis: {esc(design_sensitivity['reason'])}.\n"
    if not design_sensitivity:
        why = ("no scale model was fitted" if results.get("fit") is None
               else "the power simulation was skipped (`--no-power`)")
        return f"No power analysis: {why}.\n"
    u, design, mde = esc(design_sensitivity["units"]), design_sensitivity["design"], design_sensitivity["mde_80"]
    out(f"Data sets simulated like this one ({design['n_models']} models in {design['n_families']} families, "
        f"{len(design['tasks'])} tasks, the same readable answers per cell and the fitted variance "
        f"components: family {num(design['sigma_family'], '.2f')}, model {num(design['sigma_model'], '.2f')}, "
        f"cell {num(design['sigma_cell'], '.2f')} logits) and judged by the same decision rule show what "
        "this design can detect.\n")
    if mde is not None:
        out(f"- It detects a slope of **{num(mde, '.2f')}** {u} (Monte Carlo ±{num(design_sensitivity['mde_80_mc_se'], '.2f')}) "
            "with 80% probability (`improves`); smaller true slopes are usually missed.")
    else:
        top = max(r["slope"] for r in design_sensitivity["power_curve"])
        out(f"- No slope up to {num(top, '.2f')} {u} is detected with 80% probability.")
    out(f"- The slope's posterior sd is about {num(design_sensitivity['expected_posterior_sd'], '.3f')}. A `practically_null` "
        f"verdict needs the {effect['hdi_prob']:.0%} HDI inside the ROPE ±{design_sensitivity['rule']['rope']:g}, i.e. a posterior "
        f"sd below about {num(design_sensitivity['sd_needed_for_practically_null'], '.3f')}; when the true slope is 0 this "
        f"design reaches it with probability {num(design_sensitivity['p_practically_null_at_zero'], '.2f')}.")
    if reading := _reading(effect, design_sensitivity):
        out(reading)
    out(_more_items_or_models(design_sensitivity))
    if design_sensitivity.get("dprime"):
        out(_dprime(design_sensitivity["dprime"]))
    out(f"\n*Method:* each simulated data set is fitted by the fast approximation of the scale model in "
        f"`analysis/power/` (checked against NUTS in `validation/results/power_validation.json`); the d' "
        f"power by the normal approximation of per-cell d' (`analysis/power/dprime.py`); "
        f"{design_sensitivity['sims']} data sets per slope, seed {design_sensitivity['seed']}.\n")
    return str(out)


def _reading(effect: dict[str, Any], design_sensitivity: dict[str, Any]) -> str:
    """How to read a verdict that shows no size (or a practically null one) given the power."""
    mde, u = design_sensitivity["mde_80"], esc(design_sensitivity["units"])
    if effect["decision"] in ("no_credible_effect", "credibly_positive") and mde is not None:
        what = ("the sign is credibly positive, but the size is not shown to exceed the ROPE"
                if effect["decision"] == "credibly_positive" else "the sign is not credible")
        return (f"\n**Reading the verdict.** `{effect['decision']}` ({what}) is not evidence that the effect is "
                f"small: the data are compatible with slopes up to {num(effect['hdi_high'], '.2f')} (upper end of the "
                f"HDI), and a true slope below {num(mde, '.2f')} would often give this decision in a study of this size.")
    if effect["decision"] == "practically_null":
        return (f"\n**Reading the verdict.** The HDI lies inside the ROPE: slopes larger than "
                f"±{design_sensitivity['rule']['rope']:g} {u} are ruled out at the stated HDI probability.")
    return ""


def _more_items_or_models(design_sensitivity: dict[str, Any]) -> str:
    out = Out()
    out(f"\n**More items or more models?** At the fitted variance components the slope's sd is "
        f"{num(design_sensitivity['plugin_sd'], '.3f')}; unlimited items per model and task would bring it only to "
        f"{num(design_sensitivity['plugin_sd_unlimited_items'], '.3f')}. The rest is model-to-model variation, which only "
        "more models (ideally more families) reduce; `selfmodel power` shows by how much.")
    if design_sensitivity.get("variance_components") == "posterior_draws":
        pm_ = design_sensitivity.get("at_posterior_means") or {}
        out(f"\n**Uncertain variance components.** Each simulated data set takes its variance components "
            f"from its own draw of the fit's posterior (the family sd ranged "
            f"{num(design_sensitivity['component_draws']['sigma_family']['q05'], '.2f')} to "
            f"{num(design_sensitivity['component_draws']['sigma_family']['q95'], '.2f')} logits over the draws, 5% to 95%), so "
            "the detectable slope above averages over what the fit does not know about them; with every "
            f"data set at the posterior means it would be {num(pm_.get('mde_80'), '.2f')} {esc(design_sensitivity['units'])}.")
    return str(out).removesuffix("\n")


def _dprime(dprime: dict[str, Any]) -> str:
    du, dm = esc(dprime.get("units", "")), dprime.get("mde_80")
    return (f"\n**Sensitivity (d').** Simulated from the signal-detection fit ({dprime['n_models']} models, "
            f"{dprime['n_cells']} cells with both outcomes, variance components "
            + ("drawn from its posterior" if dprime.get("variance_components") == "posterior_draws"
               else "at their posterior means")
            + (f"), the design detects a d' slope of **{num(dm, '.2f')}** {du}" if dm is not None else
               "), no swept d' slope, up to "
               + num(max((c["slope"] for c in dprime.get("power_curve") or []), default=None), ".2f")
               + f" {du}, is detected")
            + f" with 80% probability (posterior sd of the d' slope about "
            f"{num(dprime['expected_posterior_sd'], '.3f')}; ROPE ±{dprime['rule']['rope']:g}).")


def power_curve_figure(rep: Report) -> Figure | None:
    """P(improves) by true slope, with the 80% line, the detectable slope, the ROPE and this HDI."""
    design_sensitivity, effect = sensitivity(rep), rep.eff
    if design_sensitivity is None:
        return None
    pc = sorted(design_sensitivity["power_curve"], key=lambda r: r["slope"])
    fig, ax = plt.subplots(figsize=(rep.fig_w, 2.8), layout="constrained")
    rope = design_sensitivity["rule"]["rope"]
    ax.axvspan(-rope, rope, color="0.92", zorder=0)
    xs = [r["slope"] for r in pc]
    ax.errorbar(xs, [r["p_improves"] for r in pc], yerr=[2 * r["se_improves"] for r in pc],
                marker="o", ms=4, capsize=2, color=PALETTE[0], label="P(improves)")
    ax.axhline(design_sensitivity["target_power"], color="0.3", lw=0.8, ls=":")
    if design_sensitivity["mde_80"] is not None:
        ax.axvline(design_sensitivity["mde_80"], color=PALETTE[0], lw=0.8, ls="--")
    if effect.get("hdi_low") is not None:
        ax.plot([effect["hdi_low"], effect["hdi_high"]], [0.02, 0.02], color=PALETTE[1], lw=4,
                solid_capstyle="butt", label=f"this fit's {effect['hdi_prob']:.0%} HDI")
    left = min(-rope * 1.5, effect.get("hdi_low") or 0)
    right = max(xs + [effect.get("hdi_high") or 0])
    span = right - left
    ax.set_xlim(left - 0.04 * span, right + 0.04 * span)  # room for the end markers
    ax.set_ylim(0, 1.06)
    ax.set_xlabel(f"true slope ({design_sensitivity['units']})")
    ax.set_ylabel("probability")
    ax.legend(frameon=False, loc="upper left")
    return fig
