"""Render ``reports/self_modeling.qmd`` from saved results (never refits).

The report reads ``OUT/results.json``, ``OUT/run.json``, ``OUT/cells.parquet`` and the saved
fit named in ``results.json``; it is rendered by :func:`selfmodel.report.render.render` (Quarto when
installed, the built-in engine otherwise). A report already rendered from exactly these
files, by the same report sources, renderer and package versions, is reused rather than
rendered again (:func:`selfmodel.common.rerun.report_key`; ``force=True`` renders anyway).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from selfmodel.common import rerun
from selfmodel.common.paths import REPORT_QMD
from selfmodel.records.contract import InputError
from selfmodel.report.render import RenderError, render


def render_report(
    out: Path | str,
    *,
    fmt: Literal["html", "pdf"] = "html",
    progress: Callable[[str], None] | None = None,
    force: bool = False,
    into: Path | None = None,
) -> Path:
    """Render the report for the results in ``out``; returns ``out/report.<fmt>``.

    With ``into`` (a staging folder, published into ``out`` next) the report and its key
    are written there instead of into ``out``; nothing is written when ``out``'s report is
    up to date.
    """
    out = Path(out).resolve()
    if not (out / "results.json").is_file():
        raise InputError(
            f"{out / 'results.json'}: no results. Run 'selfmodel run --out {out}' first."
        )
    target = out / f"report.{fmt}"
    if not force and rerun.report_is_current(out, fmt):
        if progress is not None:
            progress(f"{target.name} is up to date with the results: reused")
        return target
    written = (into or out) / target.name
    try:
        render(
            REPORT_QMD,
            out_file=written,
            params={"results_dir": str(out)},
            fmt=fmt,
            progress=progress,
        )
    except RenderError as e:
        raise InputError(f"report rendering failed: {e}") from None
    rerun.mark_report(out, fmt, into=into)
    return target
