"""Confidence calibration (``#fig-confidence-calibration``): observed accuracy against stated confidence, per task."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from selfmodel.report.sections.common import Report, family_colours, first_col, legend_below, panels

__all__ = ["NO_CONFIDENCE", "confidence_calibration_figure"]

#: shown instead of the confidence-calibration figure when no record stated a confidence
NO_CONFIDENCE = "No stated confidences in these records."


def confidence_calibration_figure(rep: Report) -> Figure | None:
    """Observed accuracy against stated confidence per task, models pooled within family (None: no confidences)."""
    confidence_calibration = rep.results.get("confidence_calibration") or {}
    if not confidence_calibration.get("cells"):
        return None
    fam_of = {m["model"]: m["family"] for m in rep.results["models"]}
    tasks = sorted({c["task"] for c in confidence_calibration["cells"]})
    colours = family_colours(rep)
    fig, axes = panels(rep, len(tasks), h=2.4, legend=list(colours), sharey=True)
    n_bins = len(confidence_calibration["bin_edges"]) - 1
    for ax, task in zip(axes, tasks, strict=True):
        ax.plot([0, 1], [0, 1], color="0.5", lw=0.8, ls=":")
        for fam, colour in colours.items():
            n, sq, sa = np.zeros(n_bins), np.zeros(n_bins), np.zeros(n_bins)
            for c in confidence_calibration["cells"]:
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
