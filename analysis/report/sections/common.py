"""What every report section shares: the loaded results, Markdown text and tables, figure layout.

The report (``reports/self_modeling.qmd``) opens a results folder with :func:`load`, which also
sets the figure style, and hands the :class:`Report` to one function per block of a section
(``selfmodel.report.sections.<section>``). A text block is returned as Markdown (the cell prints it);
a figure block returns its :class:`~matplotlib.figure.Figure` (the cell shows it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter

from selfmodel.decisions.verdict import fmt_number
from selfmodel.report.render_base import PAGE
from selfmodel.report.render_base import escape_md as esc

__all__ = [
    "PALETTE", "Out", "Report", "code", "esc", "family_colours", "first_col", "legend_below", "legend_rows",
    "load", "log_axis", "md_table", "num", "panels", "pct", "text_width_in", "yes_no",
]

PALETTE = sns.color_palette("colorblind")
#: seaborn theme of every figure: small type, the colour-blind palette
THEME_RC = {
    "font.size": 9, "axes.titlesize": 9.5, "axes.labelsize": 9, "xtick.labelsize": 8,
    "ytick.labelsize": 8, "legend.fontsize": 8, "legend.title_fontsize": 8,
}


@dataclass(frozen=True)
class Report:
    """The saved results a report reads, and the width its figures are drawn at."""

    results: dict[str, Any]  # results.json
    run: dict[str, Any]  # run.json ({} when absent)
    cells: pl.DataFrame | None  # cells.parquet (None when absent)
    folder: Path  # the results folder
    fig_w: float  # inches: the text block's width
    fig_max_h: float  # inches: the tallest figure a page holds

    @property
    def eff(self) -> dict[str, Any]:
        """The scale effect (``results["scale_effect"]``)."""
        return self.results["scale_effect"]

    @property
    def fit_file(self) -> Path | None:
        """The saved main fit (NetCDF), when it was fitted and its file is there."""
        fit = self.results.get("fit")
        path = self.folder / fit["file"] if fit is not None else None
        return path if path is not None and path.is_file() else None


def load(results_dir: str | Path) -> Report:
    """Read a results folder and set the figure style (call once, in the report's setup cell).

    The renderer sets the default figure size to the width of the PDF text block (also the
    HTML column): every figure is drawn at that width, so it prints at the size its fonts
    were set in. Names are data: never parsed as mathtext (``$...$``) or TeX.
    """
    folder = Path(results_dir)
    results = json.loads((folder / "results.json").read_text())
    run_file, cells_file = folder / "run.json", folder / "cells.parquet"
    run = json.loads(run_file.read_text()) if run_file.is_file() else {}
    cells = pl.read_parquet(cells_file) if cells_file.is_file() else None
    fig_w = float(plt.rcParams["figure.figsize"][0])
    sns.set_theme(style="whitegrid", context="paper", palette="colorblind", rc=THEME_RC)
    plt.rcParams.update({
        "figure.figsize": (fig_w, 0.45 * fig_w), "figure.dpi": 110, "savefig.bbox": "tight",
        "text.parse_math": False, "text.usetex": False,
    })
    np.random.seed(0)  # noqa: NPY002 - the report's figures draw nothing random; kept as set up
    return Report(results, run, cells, folder, fig_w, PAGE.fig_max_height_in)


class Out:
    """Markdown written line by line, as ``print`` would write it; ``str(out)`` is the text."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def __call__(self, text: str = "") -> None:
        """Add ``text`` and a line break."""
        self.parts.append(f"{text}\n")

    def __str__(self) -> str:
        return "".join(self.parts)


def code(s: object) -> str:
    """Data text shown as inline code; escaped (a code span would show escapes literally)."""
    return f"<code>{esc(s)}</code>"


def num(v: float | None, fmt: str = ".3f") -> str:
    """``v`` in ``fmt``; a non-zero value never prints as 0 (:func:`selfmodel.decisions.verdict.fmt_number`)."""
    return fmt_number(v, fmt)


def pct(v: float | None) -> str:
    """``v`` as a percentage with one decimal, ``n/a`` for None."""
    return "n/a" if v is None else f"{100 * v:.1f}%"


def count_rate(r: Mapping[str, Any] | None) -> str:
    """A study's count ``{k, n, rate, ci95}`` as ``k/n (rate%) [lo, hi]``; ``—`` without data."""
    if not r or not r.get("n"):
        return "—"
    lo, hi = r["ci95"]
    return f"{r['k']}/{r['n']} ({100 * r['rate']:.1f}%) [{100 * lo:.0f}, {100 * hi:.0f}]"


def yes_no(v: bool | None, no: str = "no") -> str:
    """``yes``, ``no`` (or ``no`` as given) or ``n/a``."""
    return {True: "yes", False: no, None: "n/a"}[v]


def md_table(header: Sequence[str], rows: Iterable[Sequence[object]],
             align: Sequence[str] | None = None) -> str:
    """A pipe table; dash counts follow the longest cell, so wrapped (PDF) columns get sensible widths."""
    rows = [list(r) for r in rows]
    align = list(align or ["---"] * len(header))

    def shown(c: object) -> int:
        return len(re.sub(r"<[^>]+>|\\|\*\*|`", "", str(c)))

    widths = [max([shown(header[i])] + [shown(r[i]) for r in rows]) for i in range(len(header))]
    widths = [min(max(w, 4), 40) for w in widths]
    dashes = [(a[0] if a.startswith(":") else "") + "-" * w + (":" if a.endswith(":") else "")
              for a, w in zip(align, widths, strict=False)]
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(dashes) + " |"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def log_axis(ax: Axes) -> None:
    r"""A log x axis whose tick labels are plain numbers (1, 10, 100).

    With mathtext off (names are data), the default 10^k labels would print as raw
    ``$\mathdefault{...}$`` text.
    """
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(LogFormatter(labelOnlyBase=True))
    ax.xaxis.set_minor_formatter(LogFormatter(labelOnlyBase=True))


def text_width_in(labels: Iterable[object], pt: float = 8) -> float:
    """Rough width in inches of the longest label set at ``pt`` points (for layout only)."""
    return 0.55 * pt / 72 * max([len(str(s)) for s in labels] or [0])


def panels(rep: Report, n: int, *, min_w: float = 2.0, h: float = 2.3, label_w: float = 0.0,
           legend: Sequence[object] = (), **kw: Any) -> tuple[Figure, list[Axes]]:
    """``n`` panels in rows as wide as the text: as many per row as stay ``min_w`` inches wide.

    ``legend``: the labels of a legend that :func:`legend_below` will put under the panels
    (the figure is made that much taller).
    """
    ncol = max(1, min(n, int((rep.fig_w - label_w) // min_w)))
    nrow = -(-n // ncol)
    rows = legend_rows(rep, legend)[0] if legend else 0
    fig, axes = plt.subplots(nrow, ncol, figsize=(rep.fig_w, h * nrow + 0.25 * rows),
                             squeeze=False, layout="constrained", **kw)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def legend_rows(rep: Report, labels: Sequence[object]) -> tuple[int, int]:
    """Rows and columns a legend of ``labels`` needs under a figure as wide as the text."""
    per = 0.35 + text_width_in(labels)
    ncol = max(1, min(len(labels), int(rep.fig_w // per)))
    return -(-len(labels) // ncol), ncol


def legend_below(rep: Report, fig: Figure, axes: Sequence[Axes]) -> None:
    """One legend for all panels (one entry per label, first seen first), under them."""
    seen: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=False):
            seen.setdefault(label, handle)
    if seen:
        labels = list(seen)
        fig.legend(list(seen.values()), labels, loc="outside lower center",
                   ncol=legend_rows(rep, labels)[1], frameon=False)


def first_col(ax: Axes) -> bool:
    """Whether ``ax`` is in the first column of its grid (where the y label goes)."""
    spec = ax.get_subplotspec()
    return spec is not None and spec.is_first_col()


def family_colours(rep: Report) -> dict[str, Any]:
    """A colour per model family (sorted), from the colour-blind palette."""
    fams = sorted({m["family"] for m in rep.results["models"]})
    return dict(zip(fams, sns.color_palette("colorblind", len(fams)), strict=True))
