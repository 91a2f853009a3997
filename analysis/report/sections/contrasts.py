"""Contrasts and confidence calibration per model (``#sec-contrasts``): what a study the scale model cannot answer decides.

Every number comes from ``results.json``: ``contrasts`` (``selfmodel.analyses.contrasts``) and
``confidence_calibration_contrasts`` (``selfmodel.analyses.confidence_calibration``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matplotlib.figure import Figure

from selfmodel.decisions.verdict import NOT_DECIDED, failed_checks
from selfmodel.report.sections.common import Report, esc, md_table, num, panels
from selfmodel.report.sections.skill import ECE_OF_CONFIDENCE, ECE_OF_STATED, binning_words

__all__ = ["confidence_calibration", "contrasts", "reliability_figure", "reliability_series"]


def contrasts(rep: Report) -> str:
    """The decided contrasts between conditions, models and tasks (or why there are none)."""
    results = rep.results
    if "contrasts" not in results:
        return "No contrasts in these results (the fitting stage did not run)."
    sec = results["contrasts"]
    if not sec:
        return ("The contrast model was not fitted: the scale model was fitted and the records "
                "have no conditions.")
    if sec.get("reason"):
        return f"The contrast model was not fitted: {esc(sec['reason'])}."
    exploratory = (results.get("settings") or {}).get("preset") == "exploratory"
    gate = failed_checks(sec.get("diagnostics") or {"passed": bool(sec.get("finding"))})
    undecided = not sec.get("finding") and not exploratory  # a failed fit: no decision shown
    if sec.get("finding"):
        gate_words = ""
    elif undecided:
        gate_words = (f" **Its fit failed the diagnostics gate ({esc(gate or 'diagnostics failed')}): "
                      "no contrast is decided; the estimates are shown as computed.**")
    else:
        gate_words = (" **At the exploratory settings its checks do not pass: the decisions below "
                      "are not findings.**")
    head = (f"Fitted because {esc(sec.get('why_fitted', ''))}. Each row is the difference "
            f"of two levels in {esc(sec['units'])}, decided with the declared rule "
            f"(ROPE ±{sec['rope']:g}).{gate_words}\n\n")
    decided = [(factor, label, d) for factor, by in sec["contrasts"].items()
               for label, d in by.items()]
    if not decided:
        return head + "No factor has two levels."
    rows = [[esc(factor), esc(label), esc(NOT_DECIDED if undecided else d["decision"]),
             num(d["mean"], "+.2f"),
             f"[{num(d['hdi_low'], '+.2f')}, {num(d['hdi_high'], '+.2f')}]",
             num(d["prob_positive"], ".2f")] for factor, label, d in decided]
    hdi = decided[0][2]["hdi_prob"]
    return head + md_table(["factor", "contrast", "decision", "mean", f"{hdi:.0%} HDI", "P(> 0)"],
                           rows, ["---"] * 3 + ["---:"] * 3) + "\n"


def _interval(g: Mapping[str, Any], m: str) -> str:
    if m not in g:  # results of an older selfmodel: its 'ece' was the ECE of the stated probability
        m = {"ece_stated_probability": "ece"}.get(m, m)
    if m not in g:
        return "n/a"
    return (f"{num(g[m], '+.3f' if m == 'overconfidence' else '.3f')} "
            f"[{num(g[m + '_low'], '.3f')}, {num(g[m + '_high'], '.3f')}]")


#: The column of each confidence-calibration metric (both ECEs by what they bin).
METRIC_WORDS = {"ece_stated_probability": ECE_OF_STATED, "ece": ECE_OF_STATED,
                "ece_prediction_confidence": ECE_OF_CONFIDENCE, "brier": "Brier",
                "overconfidence": "overconfidence"}


def confidence_calibration(rep: Report) -> str:
    """Per model (and condition): both ECEs, Brier, overconfidence with intervals; decided contrasts."""
    results = rep.results
    if "confidence_calibration_contrasts" not in results:
        return "No confidence calibration per model in these results (the fitting stage did not run)."
    cal = results["confidence_calibration_contrasts"]
    if not cal:
        return ("No confidence calibration per model: it is computed with the contrast model, which was not "
                "fitted, or beside any model when asked for with `selfmodel run "
                "--calibration-contrasts` (no reliability diagram).")
    if cal.get("reason"):
        return f"Confidence calibration per model: {esc(cal['reason'])} (no reliability diagram)."
    by = cal["by"]
    metrics = ("ece_stated_probability", "ece_prediction_confidence", "brier", "overconfidence")
    rows = [[*(esc(g[k]) for k in by), g["n"], num(g["mean_stated"], ".3f"),
             num(g["frequency"], ".3f"), *(_interval(g, m) for m in metrics)] for g in cal["groups"]]
    why = f"Computed because {esc(cal['why'])}. " if cal.get("why") else ""
    text = (f"{why}Intervals: {esc(cal['interval'])}. The {ECE_OF_STATED} bins the stated probability of "
            f"the outcome (of success) against the outcome; the {ECE_OF_CONFIDENCE} bins the stated "
            "confidence that the prediction is right against whether it was (the skill table's "
            f"measure); both in {esc(binning_words(results))}. Contrasts are the reduction of the error "
            f"from the first to the second level (positive: better calibrated), ROPE "
            f"±{cal['rope']:g}, decided on the {ECE_OF_STATED}, Brier and overconfidence.\n\n"
            + md_table([*by, "n", "mean stated", "observed", *(METRIC_WORDS[m] for m in metrics)],
                       rows, ["---"] * len(by) + ["---:"] * 7) + "\n")
    decided = [[esc(METRIC_WORDS.get(c["metric"], c["metric"])), esc(c["contrast"]),
                esc(", ".join(f"{k} {v}" for k, v in c["within"].items()) or "-"),
                esc(c["decision"]), num(c["mean"], "+.3f"),
                f"[{num(c['hdi_low'], '+.3f')}, {num(c['hdi_high'], '+.3f')}]"]
               for c in cal["contrasts"]]
    if decided:
        text += "\n" + md_table(["metric", "contrast", "within", "decision", "reduction", "interval"],
                                decided, ["---"] * 4 + ["---:"] * 2) + "\n"
    return text


def reliability_series(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One reliability curve per group: ``label``, ``p``, ``y``, ``n`` over the non-empty bins."""
    cal = results.get("confidence_calibration_contrasts") or {}
    out = []
    for g in cal.get("groups") or []:
        keep = [i for i, n in enumerate(g["bin_n"]) if n]
        out.append({"label": " / ".join(str(g[k]) for k in cal["by"]),
                    "p": [g["bin_p"][i] for i in keep], "y": [g["bin_y"][i] for i in keep],
                    "n": [g["bin_n"][i] for i in keep]})
    return out


def reliability_figure(rep: Report) -> Figure | None:
    """Reliability diagram per model (and condition); None without confidence calibration per model."""
    series = reliability_series(rep.results)
    if not series:
        return None
    fig, (ax,) = panels(rep, 1, h=3.0)
    ax.plot([0, 1], [0, 1], color="0.5", lw=0.8, ls=":")
    largest = max(max(s["n"]) for s in series)
    for s in series:  # a point's area grows with the records in its bin
        (line,) = ax.plot(s["p"], s["y"], lw=1, label=s["label"])
        ax.scatter(s["p"], s["y"], s=[6 + 40 * n / largest for n in s["n"]], color=line.get_color())
    ax.set_xlabel("stated probability")
    ax.set_ylabel("observed frequency")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=6, loc="upper left")
    return fig
