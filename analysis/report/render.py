"""Render Quarto reports (``reports/*.qmd``) to one self-contained HTML file or a PDF.

Quarto itself is used when it is on ``PATH``. Where it is not (it cannot be installed on the
project's machines), a built-in engine reproduces the part of Quarto the reports use. How it reads, runs
and typesets a ``.qmd``, its page layout and the cell and document options it honours:
``docs/report.md``. The code is split over ``render_base.py``,
``render_qmd.py``, ``render_kernel.py``, ``render_markdown.py`` and ``render_pandoc.py``; the
templates are ``reports/page.html``, ``reports/page.typst`` and ``reports/typst-filter.lua``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from selfmodel.common.atomic import atomic_path
from selfmodel.report.render_base import (
    DEFAULT_CSS,
    PAGE,
    FigureInfo,
    PageGeometry,
    RenderError,
    RenderResult,
    escape_md,
)
from selfmodel.report.render_kernel import build_notebook, execute
from selfmodel.report.render_markdown import assemble
from selfmodel.report.render_pandoc import write_html, write_pdf
from selfmodel.report.render_qmd import QmdDoc

__all__ = [
    "DEFAULT_CSS",
    "PAGE",
    "FigureInfo",
    "PageGeometry",
    "RenderError",
    "RenderResult",
    "escape_md",
    "render",
]


# --------------------------------------------------------------------------------------------
# public entry point
# --------------------------------------------------------------------------------------------


def render(
    qmd: Path | str,
    *,
    out_file: Path | str,
    params: Mapping[str, Any] | None = None,
    fmt: Literal["html", "pdf"] = "html",
    engine: Literal["auto", "quarto", "builtin"] = "auto",
    timeout: int = 600,
    cwd: Path | str | None = None,
    progress: Callable[[str], None] | None = None,
) -> RenderResult:
    """Render a Quarto report to a self-contained HTML file or a PDF.

    Parameters
    ----------
    qmd : path
        The ``.qmd`` source.
    out_file : path
        Where to write the result; parent folders are created, the write is atomic.
    params : mapping, optional
        Report parameters (``quarto render -P key:value``). Values may be ``str``, ``int``,
        ``float``, ``bool`` or ``None``. With the built-in engine each key must be assigned in
        the report's ``parameters`` cell, when it has one (a typo gets "did you mean ...?").
    fmt : {"html", "pdf"}
        Output format. PDF goes through Typst (``quarto render --to typst`` with Quarto).
    engine : {"auto", "quarto", "builtin"}
        ``auto`` uses Quarto when ``quarto`` is on ``PATH``, else the built-in engine.
    timeout : int
        Seconds allowed for executing all cells (built-in) or the whole ``quarto render``.
    cwd : path, optional
        Working directory of the kernel; defaults to the report's folder.
    progress : callable, optional
        Called with a short message before each code cell executes.

    Returns
    -------
    RenderResult

    Raises
    ------
    RenderError
        A cell failed (the message names the cell and the error's last line), the report asks
        for a remote resource, or pandoc/Typst/Quarto failed.
    FileNotFoundError
        ``qmd`` does not exist, or ``engine="quarto"`` and Quarto is not installed.
    ValueError
        Bad ``fmt``/``engine`` or an unusable parameter.
    """
    start = time.perf_counter()
    qmd = Path(qmd).resolve()
    out_file = Path(out_file).resolve()
    params = _checked_args(qmd, fmt, engine, params)

    quarto = shutil.which("quarto")
    if engine == "quarto" and quarto is None:
        raise FileNotFoundError("engine='quarto' but no 'quarto' executable is on PATH")
    if engine == "quarto" or (engine == "auto" and quarto is not None):
        assert quarto is not None
        _render_quarto(quarto, qmd, out_file, params, fmt, timeout, cwd)
        return RenderResult(out_file, "quarto", time.perf_counter() - start, 0)

    doc = QmdDoc.read(qmd, fmt)
    workdir = Path(cwd).resolve() if cwd is not None else qmd.parent
    landscape: tuple[int, ...] = ()
    with tempfile.TemporaryDirectory(prefix="selfmodel-render-") as tmp:
        tmpdir = Path(tmp)
        nb = build_notebook(doc, params)
        execute(nb, doc, workdir, timeout, progress)
        markdown, figures = assemble(doc, nb, fmt, tmpdir)
        if fmt == "html":
            write_html(doc, markdown, tmpdir, out_file)
        else:
            landscape = write_pdf(doc, markdown, tmpdir, out_file)
    seconds = time.perf_counter() - start
    return RenderResult(
        out_file, "builtin", seconds, len(figures), tuple(figures), landscape_tables=landscape
    )


def _checked_args(
    qmd: Path, fmt: str, engine: str, params: Mapping[str, Any] | None
) -> dict[str, Any]:
    if not qmd.is_file():
        raise FileNotFoundError(f"Report source not found: {qmd}")
    if fmt not in ("html", "pdf"):
        raise ValueError(f"fmt must be 'html' or 'pdf', not {fmt!r}")
    if engine not in ("auto", "quarto", "builtin"):
        raise ValueError(f"engine must be 'auto', 'quarto' or 'builtin', not {engine!r}")
    checked = dict(params or {})
    for key, value in checked.items():
        if not key.isidentifier():
            raise ValueError(f"Parameter name {key!r} is not a Python identifier")
        if value is not None and not isinstance(value, str | int | float | bool):
            raise ValueError(
                f"Parameter {key!r} has type {type(value).__name__}; use str, int, float, bool"
            )
    return checked


# --------------------------------------------------------------------------------------------
# Quarto engine
# --------------------------------------------------------------------------------------------


def _render_quarto(
    quarto: str,
    qmd: Path,
    out_file: Path,
    params: Mapping[str, Any],
    fmt: str,
    timeout: int,
    cwd: Path | str | None,
) -> None:
    with tempfile.TemporaryDirectory(prefix="selfmodel-quarto-") as tmp:
        name = out_file.stem + (".html" if fmt == "html" else ".pdf")
        cmd = [quarto, "render", str(qmd), "--to", "html" if fmt == "html" else "typst"]
        cmd += ["--output", name, "--output-dir", tmp]
        if fmt == "html":
            cmd += ["-M", "embed-resources:true"]
        for key, value in params.items():
            cmd += ["-P", f"{key}:{_yaml_scalar(value)}"]
        try:
            proc = subprocess.run(
                cmd,
                cwd=Path(cwd) if cwd is not None else qmd.parent,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise RenderError(
                f"quarto render {qmd.name} did not finish within {timeout} s", qmd=qmd
            ) from exc
        produced = Path(tmp) / name
        if proc.returncode != 0 or not produced.is_file():
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
            raise RenderError(
                f"quarto render {qmd.name} failed (exit {proc.returncode}):\n{tail}", qmd=qmd
            )
        with atomic_path(out_file) as target:
            shutil.copyfile(produced, target)


def _yaml_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))  # a JSON string is a YAML string
