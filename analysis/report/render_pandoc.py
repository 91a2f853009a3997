"""Markdown to a standalone HTML file or a PDF (built-in engine), with pandoc and Typst.

HTML: pandoc with ``reports/page.html`` (table of contents beside the report on wide screens)
and every resource embedded, math as MathML. PDF: pandoc's Typst writer with
``reports/page.typst`` and ``reports/typst-filter.lua`` (page geometry, running header and
footer, tables fitted to the text block), compiled by the ``typst`` package with its embedded
fonts only, so the layout does not depend on the fonts a machine has. A table too wide for a
portrait page even in the smallest table font is set on a landscape page: the document is
compiled again with those tables named (see :data:`LANDSCAPE_INPUT`).
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from selfmodel.common.atomic import atomic_path
from selfmodel.report.render_base import (
    DEFAULT_CSS,
    PAGE,
    REMOTE_CSS,
    REPORTS_DIR,
    RESOURCE_TAG,
    RenderError,
    last_line,
)
from selfmodel.report.render_qmd import QmdDoc

HTML_TEMPLATE = REPORTS_DIR / "page.html"
PDF_TEMPLATE = REPORTS_DIR / "page.typst"
PDF_FILTER = REPORTS_DIR / "typst-filter.lua"
#: ``sys.inputs`` key naming the table units (1-based, comma-separated) set landscape.
LANDSCAPE_INPUT = "selfmodel-landscape"


def metadata_block(doc: QmdDoc) -> str:
    """The YAML metadata block pandoc reads: title, subtitle, date (``today`` resolved), ..."""
    keep = ("title", "subtitle", "author", "date", "abstract", "lang", "toc-title", "keywords")
    meta = {k: doc.meta[k] for k in keep if k in doc.meta}
    if str(meta.get("date", "")).strip().lower() in ("today", "now", "last-modified"):
        meta["date"] = _dt.date.today().isoformat()
    if not meta.get("title"):
        meta["pagetitle"] = doc.path.stem
    meta.setdefault("lang", "en")
    return "---\n" + yaml.safe_dump(meta, allow_unicode=True, sort_keys=False) + "---\n\n"


def toc_args(doc: QmdDoc, markdown: str) -> list[str]:
    """Pandoc options for ``toc``, ``toc-depth`` and ``number-sections``."""
    args = []
    has_headings = re.search(r"^#{1,6}\s", markdown, flags=re.M) is not None
    if doc.meta.get("toc", True) is not False and has_headings:
        args += ["--toc", f"--toc-depth={int(doc.meta.get('toc-depth', 3))}"]
    if doc.meta.get("number-sections") is True:
        args.append("--number-sections")
    return args


def css_files(doc: QmdDoc) -> list[Path]:
    """The stylesheets to embed: the document's ``css``, else :data:`DEFAULT_CSS`."""
    css = doc.meta.get("css")
    if not css:
        return [DEFAULT_CSS] if DEFAULT_CSS.is_file() else []
    base = doc.meta_dir.get("css", doc.path.parent)
    files = [(base / c).resolve() for c in ([css] if isinstance(css, str) else css)]
    for f in files:
        if not f.is_file():
            raise RenderError(f"{doc.path.name}: stylesheet not found: {f}", qmd=doc.path)
    return files


def run_pandoc(source: Path, to: str, args: list[str], doc: QmdDoc, cwd: Path) -> str:
    """Run pandoc (from pypandoc-binary) on ``source``; its output as text."""
    import pypandoc

    # pandoc runs in the folder holding the figures, so the relative image paths resolve for
    # --embed-resources and for Typst. No os.chdir in this process.
    cmd = [pypandoc.get_pandoc_path(), str(source), "--from=markdown", f"--to={to}", *args]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, check=False)
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise RenderError(
            f"{doc.path.name}: pandoc failed (exit {proc.returncode}): {err}", qmd=doc.path
        )
    return proc.stdout.decode("utf-8")


def write_html(doc: QmdDoc, markdown: str, tmpdir: Path, out_file: Path) -> None:
    """Standalone, self-contained HTML: every image and stylesheet embedded, math as MathML."""
    source = tmpdir / "report.md"
    source.write_text(metadata_block(doc) + markdown, encoding="utf-8")
    args = [
        "--standalone",
        f"--template={HTML_TEMPLATE}",
        "--embed-resources",
        "--mathml",
        "--wrap=none",
        *toc_args(doc, markdown),
    ]
    for css in css_files(doc):
        args.append(f"--css={css}")
    html = soft_breaks(run_pandoc(source, "html5", args, doc, tmpdir))
    for pattern in (RESOURCE_TAG, REMOTE_CSS):
        if (m := pattern.search(html)) is not None:
            raise RenderError(
                f"{doc.path.name}: the rendered HTML still loads a remote resource "
                f"({html[m.start() : m.end() + 40]!r}); it would not be self-contained",
                qmd=doc.path,
            )
    with atomic_path(out_file) as target:
        target.write_text(html, encoding="utf-8")


_CELL = re.compile(r"(<t[dh]\b[^>]*>)(.*?)(</t[dh]>)", re.S)
_TAG = re.compile(r"(<[^>]*>)")
_IDENT = re.compile(r"[^\s<>]{15,}")


def soft_breaks(html: str) -> str:
    """Let long identifiers in table cells wrap after ``_`` and before ``[``.

    A table of names like ``dprime_slope_task[word_association]`` is otherwise as wide as its
    longest names and scrolls sideways in a narrow column. ``<wbr>`` marks a place where a line
    may break; the text (what a reader copies) is unchanged. Words shorter than 15 characters
    and everything outside table cells are left alone.

    Examples
    --------
    >>> soft_breaks("<td>accuracy_by_task[refusal]</td><p>a_very_long_identifier_here</p>")
    '<td>accuracy_<wbr>by_<wbr>task<wbr>[refusal]</td><p>a_very_long_identifier_here</p>'
    """

    def word(m: re.Match[str]) -> str:
        return m.group(0).replace("_", "_<wbr>").replace("[", "<wbr>[")

    def cell(m: re.Match[str]) -> str:
        parts = _TAG.split(m.group(2))
        body = "".join(p if p.startswith("<") else _IDENT.sub(word, p) for p in parts)
        return m.group(1) + body + m.group(3)

    return _CELL.sub(cell, html)


def typst_source(doc: QmdDoc, markdown: str, tmpdir: Path) -> Path:
    """Write ``report.typ`` for ``markdown`` into ``tmpdir`` and return its path."""
    source = tmpdir / "report.md"
    source.write_text(metadata_block(doc) + markdown, encoding="utf-8")
    geometry = {
        "margin-x": f"{PAGE.margin_x_mm}mm",
        "margin-top": f"{PAGE.margin_top_mm}mm",
        "margin-bottom": f"{PAGE.margin_bottom_mm}mm",
        "fontsize": f"{PAGE.font_pt}pt",
    }
    args = ["--standalone", f"--template={PDF_TEMPLATE}", f"--lua-filter={PDF_FILTER}"]
    args += [f"--variable={k}:{v}" for k, v in geometry.items()]
    typ = tmpdir / "report.typ"
    typ.write_text(run_pandoc(source, "typst", args + toc_args(doc, markdown), doc, tmpdir))
    return typ


def write_pdf(doc: QmdDoc, markdown: str, tmpdir: Path, out_file: Path) -> tuple[int, ...]:
    """Compile the PDF; returns the table units set landscape (see :data:`LANDSCAPE_INPUT`)."""
    import typst

    typ = typst_source(doc, markdown, tmpdir)
    landscape: list[int] = []
    try:
        compiler = typst.Compiler(str(typ), root=str(tmpdir), ignore_system_fonts=True)
        while True:
            pdf = compiler.compile(sys_inputs={LANDSCAPE_INPUT: ",".join(map(str, landscape))})
            wide = _query_ints(compiler, "<sm-too-wide>")
            new = sorted(set(wide) - set(landscape))
            if not new:
                break
            landscape += new
    except Exception as exc:  # typst raises its own TypstError (a RuntimeError subclass)
        raise RenderError(
            f"{doc.path.name}: Typst could not compile the PDF: {last_line(str(exc))}",
            qmd=doc.path,
        ) from exc
    assert isinstance(pdf, bytes)
    with atomic_path(out_file) as target:
        target.write_bytes(pdf)
    return tuple(sorted(landscape))


def _query_ints(compiler: Any, selector: str) -> list[int]:
    found = json.loads(compiler.query(selector, field="value"))
    return [int(v) for v in found if isinstance(v, int | float)]
