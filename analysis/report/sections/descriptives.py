"""Accuracy by model and task (``#sec-descriptives``): per-cell accuracy, skill over the mode baseline."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.figure import Figure

from selfmodel.report.sections.common import (
    PALETTE,
    Report,
    esc,
    md_table,
    num,
    panels,
    pct,
    text_width_in,
)

__all__ = ["accuracy_figure", "heatmap_figure", "model_order", "tasks", "unreadable_table"]


def model_order(rep: Report) -> list[str]:
    """Models by size (closed models last, then by name)."""
    return [m["model"] for m in sorted(rep.results["models"],
                                       key=lambda m: (m["params_b"] is None, m["params_b"] or 0, m["model"]))]


def tasks(rep: Report) -> list[str]:
    """The tasks with accuracy rows, sorted."""
    return sorted({r["task"] for r in rep.results["by_model_task"]})


def accuracy_figure(rep: Report) -> Figure:
    """Accuracy per model and task with Wilson intervals and the mode baseline, a panel per task."""
    bmt = pl.DataFrame(rep.results["by_model_task"])
    order, task_list = model_order(rep), tasks(rep)
    fig, axes = panels(rep, len(task_list), min_w=1.6, h=min(rep.fig_max_h, 0.2 * len(order) + 0.8),
                       label_w=text_width_in(order), sharey=True)
    for ax, task in zip(axes, task_list, strict=True):
        sub = {r["model"]: r for r in bmt.filter(pl.col("task") == task).iter_rows(named=True)}
        for y, m in enumerate(order):
            r = sub.get(m)
            if r is None or r["accuracy"] is None:
                continue
            ax.plot([r["ci_low"], r["ci_high"]], [y, y], color=PALETTE[0], lw=2)
            ax.plot(r["accuracy"], y, "o", color=PALETTE[0], ms=4)
            if r["baseline_accuracy"] is not None:
                ax.plot(r["baseline_accuracy"], y, "|", color="0.45", ms=10, mew=2)
        ax.set_title(task)
        ax.set_xlim(0, 1)
        ax.set_xlabel("accuracy")
    axes[0].set_yticks(range(len(order)), order)
    axes[0].invert_yaxis()
    return fig


def heatmap_figure(rep: Report) -> Figure:
    """Accuracy (with interval) and skill above the mode baseline per model and task, as a heat map."""
    order, task_list = model_order(rep), tasks(rep)
    acc = {(r["model"], r["task"]): r for r in rep.results["by_model_task"]}
    skill = np.full((len(order), len(task_list)), np.nan)
    for i, m in enumerate(order):
        for j, t in enumerate(task_list):
            r = acc.get((m, t))
            if r and r["skill_over_baseline"] is not None:
                skill[i, j] = r["skill_over_baseline"]
    lim = max(0.05, float(np.nanmax(np.abs(skill)))) if np.isfinite(skill).any() else 1.0
    label_w = text_width_in(order)
    col_w = min(1.4, (rep.fig_w - label_w - 1.0) / max(1, len(task_list)))  # 1.0 in: colour bar and label
    row_h = min(0.34, max(0.22, (rep.fig_max_h - 1.0) / max(1, len(order))))
    fig, ax = plt.subplots(figsize=(min(rep.fig_w, label_w + col_w * len(task_list) + 1.0),
                                    row_h * len(order) + 1.0), layout="constrained")
    im = ax.imshow(skill, cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto")
    cell_pt = 7 if col_w >= 1.15 else 6
    for i, m in enumerate(order):
        for j, t in enumerate(task_list):
            r = acc.get((m, t))
            if r and r["accuracy"] is not None:
                interval = f" [{r['ci_low']:.2f}, {r['ci_high']:.2f}]" if col_w >= 0.95 else ""
                dark = np.isfinite(skill[i, j]) and abs(skill[i, j]) > 0.6 * lim  # deep colour: white text
                ax.text(j, i, f"{r['accuracy']:.2f}{interval}\n{r['skill_over_baseline']:+.2f}",
                        ha="center", va="center", fontsize=cell_pt, color="white" if dark else "black",
                        linespacing=1.1)
    ax.set_xticks(range(len(task_list)), task_list)
    ax.set_yticks(range(len(order)), order)
    ax.grid(False)
    fig.colorbar(im, ax=ax, label="skill above mode baseline", shrink=0.8)
    return fig


def _per_model(rep: Report) -> dict[str, dict[str, Any]]:
    per_model: dict[str, dict[str, Any]] = {}
    for r in rep.results["by_model_task"]:
        d = per_model.setdefault(r["model"], {"n_total": 0, "n_unreadable": 0, "k": 0.0, "n": 0})
        d["n_total"] += r["n_total"]
        d["n_unreadable"] += r["n_unreadable"]
        if r["accuracy"] is not None:
            d["k"] += r["accuracy"] * r["n"]
            d["n"] += r["n"]
    return per_model


def unreadable_table(rep: Report) -> str:
    """Unreadable predictions per model and accuracy with them excluded vs counted as wrong."""
    per_model, rows = _per_model(rep), []
    for m in model_order(rep):
        d = per_model.get(m)
        if not d or not d["n_total"]:
            continue
        acc_m = d["k"] / d["n"] if d["n"] else None
        strict = d["k"] / d["n_total"]
        rows.append([esc(m), d["n_total"], d["n_unreadable"], pct(d["n_unreadable"] / d["n_total"]), num(acc_m),
                     num(strict), num(acc_m - strict, "+.3f") if acc_m is not None else "n/a"])
    text = md_table(["model", "records", "unreadable", "share", "accuracy", "strict", "gap"], rows,
                    ["---"] + ["---:"] * 6) + "\n"
    shares = [d["n_unreadable"] / d["n_total"] for d in per_model.values() if d["n_total"]]
    if shares:
        text += (f"\nUnreadable shares range from {pct(min(shares))} to {pct(max(shares))}. The scale model uses "
                 "readable predictions only; if unreadability is related to size, strict accuracy (in the "
                 "appendix tables) tells the other side of the story.\n")
    return text
