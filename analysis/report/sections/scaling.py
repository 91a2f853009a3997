"""Scaling (``#sec-scaling``): accuracy and d' against scale, extrapolation, the slope's posterior."""

from __future__ import annotations

from typing import Any

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfmodel.report.sections.common import (
    PALETTE,
    Out,
    Report,
    esc,
    family_colours,
    first_col,
    legend_below,
    log_axis,
    md_table,
    num,
    panels,
)

__all__ = ["accuracy_curves", "dprime_curves", "extrapolation_table", "intro", "slope_figure", "truth_table"]

#: the registry column of each scale variable
SCALE_COLUMN = {"params": "params_b", "active_params": "active_params_b", "capability": "capability"}


def _log_scale(rep: Report) -> bool:
    return rep.eff["scale_variable"] in ("params", "active_params")


def intro(rep: Report) -> str:
    """How to read the scaling figures (or why there are none)."""
    if rep.results.get("curves") is None:
        return "No scaling model was fitted: " + esc(rep.eff.get("reason") or "") + "."
    return ("Points are observed accuracies of models with a known scale value, coloured by family; the line "
            "and band are the posterior mean and 94% interval for an *average* model (family and model "
            "effects at zero). The dashed part lies beyond the largest model: it is **extrapolation**.")


def _band(rep: Report, ax: Axes, c: dict[str, Any]) -> None:
    """The posterior band and mean line of one task; dashed where extrapolated."""
    xs = np.array(c["scale_value"])
    xs = 10 ** xs if _log_scale(rep) else xs
    ext = np.array(c["extrapolated"])
    ax.fill_between(xs, c["low"], c["high"], color="0.8", alpha=0.7, lw=0)
    mean = np.array(c["mean"])
    ax.plot(xs[~ext], mean[~ext], color="0.2", lw=1.5)
    ax.plot(xs[ext], mean[ext], color="0.2", lw=1.5, ls="--")


def _finish(rep: Report, ax: Axes, task: str, ylabel: str) -> None:
    if _log_scale(rep):
        log_axis(ax)
    ax.set_title(task)
    ax.set_xlabel(rep.eff["registry_column"])
    if first_col(ax):
        ax.set_ylabel(ylabel)


def accuracy_curves(rep: Report) -> Figure | None:
    """Accuracy against scale per task by family, with the scale model's posterior band."""
    curves = rep.results.get("curves")
    if curves is None:
        return None
    colours = family_colours(rep)
    tasks = sorted(curves["tasks"])
    fig, axes = panels(rep, len(tasks), legend=list(colours), sharey=True)
    for ax, task in zip(axes, tasks, strict=True):
        _band(rep, ax, curves["tasks"][task])
        if rep.cells is not None:
            sub = rep.cells.filter((pl.col("task") == task) & pl.col("scale_raw").is_not_null() & (pl.col("n") > 0))
            for fam, colour in colours.items():
                f = sub.filter(pl.col("family") == fam)
                if f.height:
                    ax.scatter(f["scale_raw"], f["k"] / f["n"], color=colour, s=22, label=fam, zorder=3)
        _finish(rep, ax, task, "accuracy")
    legend_below(rep, fig, axes)
    return fig


def dprime_curves(rep: Report) -> Figure | None:
    """Observed d' against scale per task by family, with the SDT model's posterior band."""
    results = rep.results
    sdt_curves = (results.get("sdt_effect") or {}).get("curves")
    if sdt_curves is None:
        return None
    colours = family_colours(rep)
    size_of = {m["model"]: m for m in results["models"]}
    col = SCALE_COLUMN[rep.eff["scale_variable"]]
    tasks = sorted(sdt_curves["tasks"])
    fig, axes = panels(rep, len(tasks), legend=list(colours), sharey=True)
    for ax, task in zip(axes, tasks, strict=True):
        _band(rep, ax, sdt_curves["tasks"][task])
        for fam, colour in colours.items():
            pts = [(size_of[r["model"]][col], r["dprime"]) for r in results.get("skill") or []
                   if r["task"] == task and r.get("dprime") is not None
                   and size_of.get(r["model"], {}).get("family") == fam and size_of[r["model"]].get(col) is not None]
            if pts:
                xs, ys = zip(*pts, strict=True)
                ax.scatter(xs, ys, color=colour, s=22, label=fam, zorder=3)
        ax.axhline(0, color="0.5", lw=0.6)
        _finish(rep, ax, task, "d'")
    legend_below(rep, fig, axes)
    return fig


def extrapolation_table(rep: Report) -> str:
    """Predicted accuracy of an average model at the middle and the end of each task's curve."""
    curves = rep.results.get("curves")
    if curves is None:
        return ""
    rows = []
    for task in sorted(curves["tasks"]):
        c = curves["tasks"][task]
        for idx in (len(c["x"]) // 2, len(c["x"]) - 1):
            v = c["scale_value"][idx]
            shown = f"{10 ** v:,.0f}" if _log_scale(rep) else f"{v:.2f}"
            rows.append([esc(task), shown, num(c["mean"][idx]), f"[{num(c['low'][idx])}, {num(c['high'][idx])}]",
                         "**extrapolation**" if c["extrapolated"][idx] else "within data"])
    return md_table(["task", rep.eff["registry_column"], "predicted accuracy", curves["interval"], ""], rows,
                    ["---", "---:", "---:", "---:", "---"])


def slope_figure(rep: Report) -> Figure | None:
    """Posterior densities of the overall and per-task slopes over the ROPE."""
    if rep.fit_file is None:
        return None
    post = az.from_netcdf(rep.fit_file).posterior
    fig, ax = plt.subplots(figsize=(rep.fig_w, 2.8), layout="constrained")
    rope = rep.eff["rope"]
    ax.axvspan(-rope, rope, color="0.9", zorder=0, label="ROPE")
    series = [("overall", post["beta"].values.ravel())] + [
        (str(t), post["slope_task"].sel(task=t).values.ravel()) for t in post["task"].values]
    for i, (name, d) in enumerate(series):
        sns.kdeplot(d, ax=ax, label=name, color=PALETTE[i % len(PALETTE)], lw=2.2 if i == 0 else 1.2)
    ax.axvline(0, color="0.3", lw=0.8)
    ax.set_xlabel(rep.eff["units"])
    ax.legend(frameon=False)
    return fig


def truth_table(rep: Report) -> str:
    """Estimates against the simulation truth (a subsection, only for simulated data)."""
    truth, out = rep.results.get("truth_comparison"), Out()
    if not truth:
        return ""
    out("## Estimates against the simulation truth {#sec-truth}\n")
    out(f"These data were simulated with known truth. Estimand: {esc(truth['estimand'])}.\n")
    out(md_table(["effect", "true", "estimate", "94% HDI", "covered"],
                 [[esc(r["effect"]), num(r["true"]), num(r["estimate"]), f"[{num(r['hdi_low'])}, {num(r['hdi_high'])}]",
                   "yes" if r["covered"] else "**no**"] for r in truth["rows"]],
                 ["---", "---:", "---:", "---:", "---"]))
    return str(out)
