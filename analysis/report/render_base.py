"""Shared pieces of the report renderer (:mod:`selfmodel.report.render`): errors, results, page geometry.

The renderer is split over ``analysis/render*.py``: :mod:`selfmodel.report.render` (public entry point
and the Quarto engine), :mod:`selfmodel.report.render_qmd` (reading the ``.qmd``),
:mod:`selfmodel.report.render_kernel` (building and executing the notebook),
:mod:`selfmodel.report.render_markdown` (executed notebook to Markdown) and
:mod:`selfmodel.report.render_pandoc` (Markdown to HTML or PDF). Import only from :mod:`selfmodel.report.render`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from selfmodel.common.paths import REPORTS_DIR

#: Default stylesheet, used when neither the front matter nor ``_quarto.yml`` names one.
DEFAULT_CSS = REPORTS_DIR / "style.css"

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
INLINE = re.compile(r"`\{python\}\s+([^`]+?)`")
RESOURCE_TAG = re.compile(
    r"<(script|link|img|iframe|source|video|audio|embed|object|track)\b[^>]*?"
    r"\b(?:src|href|data|srcset|poster)\s*=\s*[\"']?\s*(?:https?:)?//",
    re.IGNORECASE,
)
REMOTE_CSS = re.compile(r"(?:url\(\s*[\"']?\s*(?:https?:)?//|@import\s+[\"']?(?:https?:)?//)")
MD_REMOTE_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?\s*(?:https?:)?//")
MARKER = "\x1eSELFMODEL-INLINE\x1e"


@dataclass(frozen=True)
class PageGeometry:
    """The PDF page: A4 portrait, margins in millimetres, the body font size in points.

    The running header sits in the top margin and the page footer in the bottom margin, each
    inside a band of ``band_mm`` next to the text block; everything else lies in the text block.
    Landscape pages (wide tables) are the same page turned: ``margin_x_mm`` is then the margin
    left and right of the landscape page.
    """

    width_mm: float = 210.0
    height_mm: float = 297.0
    margin_x_mm: float = 20.0
    margin_top_mm: float = 24.0
    margin_bottom_mm: float = 24.0
    band_mm: float = 14.0
    font_pt: float = 10.5

    def text_width_in(self, *, landscape: bool = False) -> float:
        """Width of the text block in inches."""
        width = self.height_mm if landscape else self.width_mm
        return (width - 2 * self.margin_x_mm) / 25.4

    def text_height_in(self, *, landscape: bool = False) -> float:
        """Height of the text block in inches."""
        height = self.width_mm if landscape else self.height_mm
        return (height - self.margin_top_mm - self.margin_bottom_mm) / 25.4

    @property
    def fig_width_in(self) -> float:
        """Default figure width: the text block less matplotlib's tight-bbox padding."""
        return round(self.text_width_in() - 0.25, 2)

    @property
    def fig_max_height_in(self) -> float:
        """Tallest figure image that leaves room for a three-line caption on its page."""
        return round(self.text_height_in() - 1.1, 2)


#: The geometry every PDF is set in (the Typst template receives these numbers).
PAGE = PageGeometry()

#: PNG resolution of figures: sharp on high-density screens and on paper.
FIG_DPI = 144


class RenderError(RuntimeError):
    """A report could not be rendered.

    Attributes
    ----------
    qmd : pathlib.Path
        The report source.
    cell : str or None
        The failing cell: its ``label`` or ``"code cell #k (line n)"``.
    detail : str or None
        The last line of the Python error, e.g. ``"KeyError: 'scale_effect'"``.
    """

    def __init__(
        self, message: str, *, qmd: Path, cell: str | None = None, detail: str | None = None
    ) -> None:
        super().__init__(message)
        self.qmd = qmd
        self.cell = cell
        self.detail = detail


@dataclass(frozen=True)
class FigureInfo:
    """One image of the document and the size it is shown at.

    Attributes
    ----------
    label : str
        The cell's ``fig-*`` label, or ``""``.
    width_in, height_in : float
        Size the image was drawn at (pixels / :data:`FIG_DPI`).
    shown_width_in : float
        Width it is set at in the PDF (HTML: the width it is displayed at, in CSS inches).
    """

    label: str
    width_in: float
    height_in: float
    shown_width_in: float

    @property
    def scale(self) -> float:
        """Shown size over drawn size: below 1 the figure's fonts print smaller than drawn."""
        return self.shown_width_in / self.width_in if self.width_in else 1.0


@dataclass(frozen=True)
class RenderResult:
    """What :func:`selfmodel.report.render.render` produced.

    Attributes
    ----------
    out_file : pathlib.Path
        The written HTML or PDF file.
    engine : {"quarto", "builtin"}
        The engine that rendered it.
    seconds : float
        Wall-clock time of the whole render.
    n_figures : int
        Number of images in the document (built-in engine; 0 when Quarto rendered it).
    figures : tuple of FigureInfo
        Each image and the size it is shown at (built-in engine).
    landscape_tables : tuple of int
        PDF only: tables (numbered in document order from 1) set on a landscape page because
        they did not fit the portrait text block even in the smallest table font.
    """

    out_file: Path
    engine: Literal["quarto", "builtin"]
    seconds: float
    n_figures: int
    figures: tuple[FigureInfo, ...] = ()
    landscape_tables: tuple[int, ...] = ()


def escape_md(s: object) -> str:
    r"""Make an arbitrary string safe to place in Markdown text or a table cell.

    HTML specials become entities, every other ASCII punctuation character is backslash-escaped
    (pandoc and CommonMark read ``\x`` as a literal ``x``), and line breaks become spaces so a
    value cannot end a table row or start a new block. The rendered text shows ``s`` verbatim.

    Parameters
    ----------
    s : object
        The value; non-strings are converted with :func:`str`.

    Returns
    -------
    str
        Markdown source that renders as the literal text of ``s``.

    Examples
    --------
    >>> escape_md("<script>alert(1)</script>")
    '&lt;script&gt;alert\\(1\\)&lt;\\/script&gt;'
    >>> escape_md("gpt_4 | *big*")
    'gpt\\_4 \\| \\*big\\*'
    >>> escape_md("=1+1")
    '\\=1\\+1'
    """
    out = []
    for ch in str(s):
        if ch == "&":
            out.append("&amp;")
        elif ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch in "\r\n\t\v\f":
            out.append(" ")
        elif ord(ch) < 32 or ord(ch) == 127:
            continue
        elif ch.isascii() and not ch.isalnum() and not ch.isspace():
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def last_line(text: str) -> str:
    """Last non-empty line of ``text`` without ANSI colour codes."""
    lines = [ln for ln in ANSI.sub("", text).strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else text
