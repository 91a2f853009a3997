"""Power output: the table, the summary lines, the plot and ``power.json``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from selfmodel.common import atomic
from selfmodel.common.jsonable import rounded
from selfmodel.power.design import OUTCOMES, TARGET_POWER, Design
from selfmodel.power.design_file import design_to_toml
from selfmodel.records.contract import decision_word

# --------------------------------------------------------------------------- output


def power_table(power: Mapping[str, Any]) -> Any:
    """A rich table of the decision probabilities per true slope."""
    from rich.table import Table

    t = Table(
        title=f"decision probabilities by true slope ({power['units']}), "
        f"{power['sims']} simulations each"
    )
    # one column per outcome, named from the outcomes themselves (the header and the cells
    # come from one list)
    for col in ("slope", *(o.replace("_", " ") for o in OUTCOMES), "mean post. sd"):
        t.add_column(col, justify="right")
    for r in power["results"]:
        t.add_row(
            f"{r['slope']:g}",
            *(f"{r[f'p_{o}']:.2f}" for o in OUTCOMES),
            f"{r['mean_posterior_sd']:.3f}",
        )
    return t


def summary_lines(power: Mapping[str, Any]) -> list[str]:
    """Plain-text conclusions of a power run (for the console)."""
    rule = power["rule"]
    lines = []
    if power["mde_80"] is None:
        top = max(r["slope"] for r in power["results"])
        lines.append(
            f"no swept slope up to {top:g} is detected ('improves') with 80% power; "
            "try larger --slopes or a bigger design"
        )
    else:
        extra = (
            f" (interpolated {power['mde_80_interpolated']:.3f})"
            if power.get("mde_80_interpolated") is not None
            else ""
        )
        lines.append(
            f"minimum detectable slope at 80% power: {power['mde_80']:g}{extra} {power['units']}"
        )
    zero = [r for r in power["results"] if r["slope"] == 0.0]
    if zero:
        z = zero[0]
        lines.append(
            f"at a true slope of 0: P(practically_null) = {z['p_practically_null']:.2f}, "
            f"P(improves) = {z['p_improves']:.2f} (false-positive rate), "
            f"ROPE +/-{rule['rope']:g}"
        )
    mvi = power.get("models_vs_items")
    if mvi:
        c = mvi["cells"]
        lo_m, hi_m = min(mvi["models_per_family"]), max(mvi["models_per_family"])
        lo_i, hi_i = min(mvi["items"]), max(mvi["items"])

        def mde(m: int, i: int) -> float:
            return next(
                x["mde_80_normal_theory"]
                for x in c
                if x["models_per_family"] == m and x["items"] == i
            )

        mid_i = sorted(mvi["items"])[len(mvi["items"]) // 2]
        lines.append(
            f"more items: with {lo_m} models per family, {lo_i} -> {hi_i} items per task moves the "
            f"detectable slope {mde(lo_m, lo_i):.2f} -> {mde(lo_m, hi_i):.2f}; more models: at "
            f"{mid_i} items, {lo_m} -> {hi_m} models per family moves it {mde(lo_m, mid_i):.2f} -> "
            f"{mde(hi_m, mid_i):.2f} (80% power, normal theory from the simulated posterior sds)"
        )
    return lines


def plot_power(power: Mapping[str, Any], path: Path | str) -> Path:
    """Plot the decision probabilities against the true slope (and models vs items).

    Parameters
    ----------
    power
        What :func:`run_power` returns, optionally with ``models_vs_items``.
    path
        PNG file to write (atomically).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt


    mvi = power.get("models_vs_items")
    ncol = 2 if mvi else 1
    fig, axes = plt.subplots(1, ncol, figsize=(5.6 * ncol, 3.9), squeeze=False)
    _plot_decisions(axes[0][0], power)
    if mvi:
        _plot_models_vs_items(axes[0][1], mvi, plt.get_cmap("viridis"))
    fig.tight_layout()
    path = Path(path)
    atomic.write_with(path, lambda p: fig.savefig(p, dpi=120, format="png"))
    plt.close(fig)
    return path


def _plot_decisions(ax: Any, power: Mapping[str, Any]) -> None:
    """Probability of each decision against the true slope, with the 80% power line."""
    res = sorted(power["results"], key=lambda r: r["slope"])
    xs = np.array([r["slope"] for r in res])
    rope = power["rule"]["rope"]
    ax.axvspan(-rope, rope, color="0.92", zorder=0, label=f"ROPE ±{rope:g}")
    colours = {o: decision_word(o).colour for o in OUTCOMES}
    for o in OUTCOMES:
        ps = np.array([r[f"p_{o}"] for r in res])
        if o in ("worsens", "credibly_negative") and not ps.any():
            continue
        se = np.array([r[f"se_{o}"] for r in res])
        ax.errorbar(
            xs,
            ps,
            yerr=2 * se,
            marker="o",
            ms=4,
            lw=1.6,
            capsize=2,
            color=colours[o],
            label=o.replace("_", " "),
        )
    ax.axhline(TARGET_POWER, color="0.3", lw=0.8, ls=":")
    if power.get("mde_80") is not None:
        m = power.get("mde_80_interpolated") or power["mde_80"]
        ax.axvline(m, color=colours["improves"], lw=0.8, ls="--")
        ax.annotate(
            f"80% power\nat {m:.2f}",
            (m, 0.45),
            xytext=(6, 0),
            textcoords="offset points",
            fontsize=8,
        )
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(f"true slope ({power['units']})")
    ax.set_ylabel("probability of decision")
    d = power["design"]
    ax.set_title(
        f"{d['n_models']} models in {d['n_families']} families, {len(d['tasks'])} tasks; "
        f"{power['sims']} sims",
        fontsize=9,
    )
    ax.legend(fontsize=7, frameon=False, loc="center right")


def _plot_models_vs_items(ax2: Any, mvi: Mapping[str, Any], cmap: Any) -> None:
    """P(improves) against items per task, one line per number of models per family."""
    for i, m in enumerate(mvi["models_per_family"]):
        row = sorted(
            (c for c in mvi["cells"] if c["models_per_family"] == m), key=lambda c: c["items"]
        )
        its = [c["items"] for c in row]
        ps = np.array([c["p_improves"] for c in row])
        se = np.array([c["se_improves"] for c in row])
        ax2.errorbar(
            its,
            ps,
            yerr=2 * se,
            marker="o",
            ms=4,
            lw=1.4,
            capsize=2,
            color=cmap(i / max(1, len(mvi["models_per_family"]) - 1)),
            label=f"{m} per family ({row[0]['n_models']} models)",
        )
    ax2.axhline(TARGET_POWER, color="0.3", lw=0.8, ls=":")
    ax2.set_xscale("log")
    ax2.set_ylim(-0.02, 1.02)
    ax2.set_xlabel("items per task")
    ax2.set_ylabel("P(improves)")
    ax2.set_title(f"more models vs more items, true slope {mvi['slope']:.3g}", fontsize=9)
    ax2.legend(fontsize=7, frameon=False)


def write_power(
    power: Mapping[str, Any], out: Path | str, *, design: Design | None = None
) -> dict[str, Path]:
    """Write ``OUT/power.json`` and ``OUT/power.png`` (and ``OUT/design.toml`` when given).

    ``power.json`` is a deterministic function of the design, slopes, sims and seed (no
    timings), so a rerun with the same seed is byte-identical.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "power.json", "plot": out / "power.png"}
    atomic.write_json(paths["json"], rounded(dict(power)))
    plot_power(power, paths["plot"])
    if design is not None:
        paths["design"] = out / "design.toml"
        atomic.write_text(paths["design"], design_to_toml(design))
    return paths
