"""Skill beyond base rates (``#sec-skill``): kappa, balanced accuracy, d', c, Brier, AUROC, calibration."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from selfmodel.report.sections.common import (
    Out,
    Report,
    esc,
    family_colours,
    first_col,
    legend_below,
    legend_rows,
    md_table,
    num,
    panels,
)

__all__ = ["NO_CONFIDENCE", "calibration_figure", "intro", "table"]

#: shown instead of the calibration figure when no record stated a confidence
NO_CONFIDENCE = "No stated confidences in these records."


def intro(rep: Report) -> str:
    """What the skill measures are, and the d'/c that the rates do not allow."""
    R, out = rep.results, Out()
    out("Accuracy alone rewards a model for guessing the common outcome. For binary self-predictions "
        "the table gives skill measures that are zero for a model that ignores itself: Cohen's kappa, "
        "balanced accuracy (0.5 = no skill), the SDT sensitivity d' (log-linear correction, Hautus 1995) "
        "and criterion c (negative = yes-bias), and, where models stated a confidence, the Brier score, "
        "the AUROC of the implied probability for the outcome and the expected calibration error. "
        f"Confidence is read as: {esc((R.get('calibration') or {}).get('semantics', 'n/a'))}.\n")
    notes = [r for r in R.get("skill") or [] if r.get("binary") and r.get("sdt_note")]
    if notes:
        out("d' and c where the rates do not allow them (a constant responder has d' 0: its hit and false-alarm "
            "rates are equal): " + "; ".join(f"{esc(r['model'])} / {esc(r['task'])}: {esc(r['sdt_note'])}"
                                           for r in notes) + ".\n")
    return str(out)


def table(rep: Report) -> str:
    """Skill per model and task."""
    return md_table(["model", "task", "acc.", "mode", "kappa", "bal. acc.", "d'", "c", "Brier", "AUROC", "ECE"],
                    [[esc(r["model"]), esc(r["task"]), num(r["accuracy"]), num(r["mode_baseline"]),
                      num(r["kappa"], "+.3f"), num(r["balanced_accuracy"]), num(r["dprime"], "+.2f"),
                      num(r["criterion"], "+.2f"), num(r["brier"]), num(r["auroc"]), num(r["ece"])]
                     for r in rep.results.get("skill") or []],
                    ["---", "---"] + ["---:"] * 9)


def calibration_figure(rep: Report) -> Figure | None:
    """Observed accuracy against stated confidence per task, models pooled within family (None: no confidences)."""
    CAL = rep.results.get("calibration") or {}
    if not CAL.get("cells"):
        return None
    fam_of = {m["model"]: m["family"] for m in rep.results["models"]}
    tasks = sorted({c["task"] for c in CAL["cells"]})
    colours = family_colours(rep)
    fig, axes = panels(rep, len(tasks), h=2.4, legend_rows=legend_rows(rep, list(colours))[0], sharey=True)
    n_bins = len(CAL["bin_edges"]) - 1
    for ax, task in zip(axes, tasks, strict=True):
        ax.plot([0, 1], [0, 1], color="0.5", lw=0.8, ls=":")
        for fam, colour in colours.items():
            n, sq, sa = np.zeros(n_bins), np.zeros(n_bins), np.zeros(n_bins)
            for c in CAL["cells"]:
                if c["task"] == task and fam_of.get(c["model"]) == fam:
                    for i, nb in enumerate(c["bin_n"]):
                        if nb:
                            n[i] += nb
                            sq[i] += nb * c["bin_confidence"][i]
                            sa[i] += nb * c["bin_accuracy"][i]
            ok = n > 0
            if ok.any():
                ax.plot(sq[ok] / n[ok], sa[ok] / n[ok], color=colour, lw=1, alpha=0.8)
                ax.scatter(sq[ok] / n[ok], sa[ok] / n[ok], s=6 + n[ok] / 10, color=colour, label=fam, zorder=3)
        ax.set_title(task)
        ax.set_xlabel("stated confidence")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        if first_col(ax):
            ax.set_ylabel("observed accuracy")
    legend_below(rep, fig, axes)
    return fig
