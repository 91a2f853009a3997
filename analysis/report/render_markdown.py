"""Turn an executed report notebook into one Markdown document (built-in engine).

Figures become PNG files beside the Markdown, sized for the output (HTML: the size drawn, at
96 CSS px per inch; PDF: the size drawn, reduced only when wider than the text block or taller
than a page allows). Tables arrive as raw HTML (HTML output) or Markdown converted from it
(PDF), ``output: asis`` text as Markdown. Consecutive stream outputs of one cell are joined
before they are interpreted: a kernel may flush what one ``print`` wrote in several pieces,
and a table or a fenced div must not depend on where those pieces were cut.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selfmodel.report.render_base import (
    ANSI,
    FIG_DPI,
    INLINE,
    MARKER,
    MD_REMOTE_IMAGE,
    PAGE,
    RESOURCE_TAG,
    FigureInfo,
    RenderError,
    escape_md,
)
from selfmodel.report.render_qmd import Cell, QmdDoc

XREF = re.compile(r"(?<![\w\\@])@((?:fig|tbl)-[A-Za-z0-9_-]*[A-Za-z0-9_])")


@dataclass
class Piece:
    """A chunk of the Markdown document."""

    text: str
    markdown: bool  # cross-references are resolved in Markdown pieces, not code or data


@dataclass
class _State:
    fmt: str
    figdir: Path
    numbers: dict[str, tuple[str, int]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=lambda: {"fig": 0, "tbl": 0})
    figures: list[FigureInfo] = field(default_factory=list)
    n_images: int = 0


def fence(text: str, cls: str = "") -> str:
    """A fenced code block holding ``text`` verbatim (the fence outgrows any backticks in it)."""
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{cls}\n{text.rstrip()}\n{ticks}\n"


def as_text(value: Any) -> str:
    """Notebook text fields are a string or a list of strings."""
    return "".join(value) if isinstance(value, list) else str(value)


def coalesce_streams(outputs: list[Any]) -> list[dict[str, Any]]:
    r"""Join consecutive ``stream`` outputs of the same stream (stdout or stderr) into one.

    A kernel sends what a cell prints in as many messages as its buffer flushes; their
    boundaries carry no meaning. Other outputs (figures, tables) keep their place between the
    joined streams.

    Examples
    --------
    >>> outs = [{"output_type": "stream", "name": "stdout", "text": "| a |\n|--"},
    ...         {"output_type": "stream", "name": "stdout", "text": "-|\n| 1 |\n"}]
    >>> coalesce_streams(outs)[0]["text"]
    '| a |\n|---|\n| 1 |\n'
    """
    joined: list[dict[str, Any]] = []
    for out in outputs:
        prev = joined[-1] if joined else None
        if (
            out.get("output_type") == "stream"
            and prev is not None
            and prev.get("output_type") == "stream"
            and prev.get("name") == out.get("name")
        ):
            prev["text"] = as_text(prev.get("text", "")) + as_text(out.get("text", ""))
        else:
            joined.append(dict(out))
    return joined


def html_to_markdown(html: str) -> str:
    """Raw HTML output (a pandas table) as pandoc Markdown, for the PDF."""
    import pypandoc

    # ``style`` and ``script`` elements are presentation for the browser; drop them for Typst.
    html = re.sub(r"<(style|script)\b.*?</\1\s*>", "", html, flags=re.S | re.I)
    # Wrapper divs (pandas wraps its tables) would become fenced divs around the table.
    html = re.sub(r"</?div\b[^>]*>", "", html, flags=re.I)
    return pypandoc.convert_text(html, "markdown", format="html", extra_args=["--wrap=none"])


def assemble(doc: QmdDoc, nb: Any, fmt: str, figdir: Path) -> tuple[str, list[FigureInfo]]:
    """The executed notebook ``nb`` as Markdown for ``fmt``; figures are written to ``figdir``.

    Returns the Markdown and one :class:`FigureInfo` per image, in document order.
    """
    outputs, inline = _collect(nb)
    state = _State(fmt, figdir)
    pieces: list[Piece] = []
    for i, cell in enumerate(doc.cells):
        if cell.kind == "markdown":
            pieces.append(_markdown_piece(cell, inline.get(i, [])))
        else:
            pieces.extend(_code_pieces(doc, cell, outputs.get(i, []), state))

    def _xref(m: re.Match[str]) -> str:
        label = m.group(1)
        if label not in state.numbers:
            return f"?\\@{label}"
        word, n = state.numbers[label]
        return f"[{word} {n}](#{label})"

    markdown = "\n".join(XREF.sub(_xref, p.text) if p.markdown else p.text for p in pieces)
    if MD_REMOTE_IMAGE.search(markdown) or RESOURCE_TAG.search(markdown):
        raise RenderError(
            f"{doc.path.name}: the report refers to a remote resource (an http(s) src/href); "
            "reports must be self-contained",
            qmd=doc.path,
        )
    return markdown, state.figures


def _collect(nb: Any) -> tuple[dict[int, list[Any]], dict[int, list[dict[str, str]]]]:
    outputs: dict[int, list[Any]] = {}
    inline: dict[int, list[dict[str, str]]] = {}
    for nb_cell in nb.cells:
        info = nb_cell.metadata.get("selfmodel", {})
        if info.get("role") == "cell":
            outputs[info["cell"]] = coalesce_streams(nb_cell.get("outputs", []))
        elif info.get("role") == "inline":
            for out in coalesce_streams(nb_cell.get("outputs", [])):
                text = as_text(out.get("text", ""))
                if out.get("output_type") == "stream" and MARKER in text:
                    inline[info["cell"]] = json.loads(text.split(MARKER, 1)[1])
    return outputs, inline


def _markdown_piece(cell: Cell, values_list: list[dict[str, str]]) -> Piece:
    values = iter(values_list)

    def _sub(_m: re.Match[str]) -> str:
        v = next(values, {"text": "?"})
        return v["md"] if "md" in v else escape_md(v["text"])

    return Piece(INLINE.sub(_sub, cell.source) + "\n", True)


def _code_pieces(doc: QmdDoc, cell: Cell, outputs: list[Any], state: _State) -> list[Piece]:
    opts = cell.options
    if opts.get("include", True) is False:
        return []
    pieces: list[Piece] = []
    if opts.get("echo", doc.execute_option("echo", False)) is True:
        pieces.append(Piece(fence(cell.source, "python"), False))
    output_opt = opts.get("output", True)
    if output_opt is False or opts.get("eval", True) is False:
        return pieces
    show_warnings = opts.get("warning", doc.execute_option("warning", True)) is not False
    label = str(opts.get("label") or "")
    kind = label.split("-", 1)[0] if label.startswith(("fig-", "tbl-")) else ""

    images: list[Path] = []
    body: list[Piece] = []
    for out in outputs:
        image = _image_file(out, state)
        if image is not None:
            images.append(image)
        else:
            body.extend(_output_pieces(out, asis=output_opt == "asis", fmt=state.fmt,
                                       show_warnings=show_warnings))
    if images:
        pieces.extend(_figure_pieces(images, opts, label if kind == "fig" else "", state))
    if kind == "tbl":
        state.counters["tbl"] += 1
        state.numbers[label] = ("Table", state.counters["tbl"])
        tcap = opts.get("tbl-cap") or ""
        # One layout for both formats: a div carrying the label, caption above the table.
        # (For Typst this keeps the label even when the output is not a pandoc table.)
        head = f"Table {state.counters['tbl']}: {tcap}" if tcap else ""
        pieces.append(Piece(f":::: {{#{label} .quarto-table}}\n", False))
        if head:
            pieces.append(Piece(f"::: {{.table-caption}}\n{head}\n:::\n", True))
        pieces.extend(body)
        pieces.append(Piece("::::\n", False))
    else:
        pieces.extend(body)
    return pieces


def _image_file(out: Any, state: _State) -> Path | None:
    if out.get("output_type") not in ("display_data", "execute_result"):
        return None
    data = out.get("data", {})
    for mime, ext in (("image/png", "png"), ("image/jpeg", "jpg")):
        if mime in data:
            state.n_images += 1
            path = state.figdir / f"figure-{state.n_images}.{ext}"
            path.write_bytes(base64.b64decode(as_text(data[mime])))
            return path
    return None


def _output_pieces(out: Any, *, asis: bool, fmt: str, show_warnings: bool) -> list[Piece]:
    otype = out.get("output_type")
    if otype == "stream":
        text = ANSI.sub("", as_text(out.get("text", "")))
        if out.get("name") == "stderr":
            if show_warnings and text.strip():
                return [Piece(fence(text, "{.cell-output-stderr}"), False)]
            return []
        if asis:
            return [Piece(text + "\n", True)]
        return [Piece(fence(text, "{.cell-output}"), False)] if text.strip() else []
    if otype == "error":
        tb = ANSI.sub("", "\n".join(out.get("traceback", [])))
        return [Piece(fence(tb, "{.cell-output-error}"), False)]
    if otype not in ("display_data", "execute_result"):
        return []
    data = out.get("data", {})
    if "text/markdown" in data:
        return [Piece(as_text(data["text/markdown"]) + "\n", True)]
    if "text/html" in data:
        html = as_text(data["text/html"])
        if fmt == "html":
            return [Piece(fence(html, "{=html}"), False)]
        return [Piece(html_to_markdown(html) + "\n", False)]
    if "text/plain" in data:
        text = as_text(data["text/plain"])
        return [Piece(text + "\n", True) if asis else Piece(fence(text, "{.cell-output}"), False)]
    return []


def _figure_pieces(
    images: list[Path], opts: dict[str, Any], label: str, state: _State
) -> list[Piece]:
    cap = opts.get("fig-cap")
    number = ""
    if label:
        state.counters["fig"] += 1
        state.numbers[label] = ("Figure", state.counters["fig"])
        # Typst numbers figures itself; HTML gets Quarto's "Figure N: " prefix.
        number = f"Figure {state.counters['fig']}: " if state.fmt == "html" else ""
    pieces = []
    for k, img in enumerate(images):
        attrs = [f"#{label}"] if label and k == 0 else []
        size_attr, info = image_size(img, state.fmt, label)
        state.figures.append(info)
        if size_attr:
            attrs.append(size_attr)
        alt = opts.get("fig-alt") or cap
        if alt:
            attrs.append(f"alt={json.dumps(_plain(str(alt)))}")
        caption = f"{number}{cap}" if cap and k == len(images) - 1 else ""
        attr = "{" + " ".join(attrs) + "}" if attrs else ""
        if caption or attr:
            pieces.append(Piece(f"![{caption}]({img.name}){attr}\n", True))
        else:  # an image alone with no caption must not become a figure
            pieces.append(Piece(f"![]({img.name})\\\n", True))
    return pieces


def image_size(png: Path, fmt: str, label: str = "") -> tuple[str, FigureInfo]:
    """The size attribute for an image drawn at :data:`FIG_DPI`, and what it amounts to.

    HTML shows the image at the size drawn (96 CSS px per inch; the stylesheet narrows it to
    the column when the column is narrower). The PDF sets it at the size drawn unless that is
    wider than the text block or taller than :attr:`PageGeometry.fig_max_height_in`; then it
    is reduced to fit, never enlarged.
    """
    head = png.read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return "", FigureInfo(label, 0.0, 0.0, 0.0)
    w_in = int.from_bytes(head[16:20], "big") / FIG_DPI
    h_in = int.from_bytes(head[20:24], "big") / FIG_DPI
    if fmt == "html":
        return f"width={round(w_in * 96)}px", FigureInfo(label, w_in, h_in, w_in)
    scale = min(1.0, PAGE.text_width_in() / w_in, PAGE.fig_max_height_in / h_in)
    shown = w_in * scale
    return f"width={shown:.3f}in", FigureInfo(label, w_in, h_in, shown)


def _plain(text: str) -> str:
    """Strip the most common Markdown marks so a caption reads well as alt text."""
    return re.sub(r"[*_`]|\$", "", text).strip()
