"""Read a Quarto ``.qmd`` for the built-in engine: cells, ``#|`` options, merged metadata.

The file is read with jupytext (R Markdown reader: Quarto's ```` ```{python} ```` chunks with
``#| key: value`` option lines parse to the same cells); its YAML front matter is merged over the
nearest ``_quarto.yml``, with ``format: html:`` (HTML) or ``format: typst:``/``format: pdf:``
(PDF) keys over the top-level ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from selfmodel.report.render_base import RenderError

FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*\{([A-Za-z0-9_]+)")

@dataclass
class Cell:
    """One cell of the report: Markdown text, or Python code with its ``#|`` options."""

    kind: Literal["markdown", "code"]
    source: str  # code without the ``#|`` option lines
    options: dict[str, Any] = field(default_factory=dict)
    index: int = 0  # 1-based among code cells
    line: int | None = None  # line of the opening fence in the .qmd

    @property
    def name(self) -> str:
        """How error messages name the cell: its label and position."""
        label = self.options.get("label")
        where = f"code cell #{self.index}" + (f", line {self.line}" if self.line else "")
        return f"'{label}' ({where})" if label else where


@dataclass
class QmdDoc:
    """A parsed report: its cells and the merged document metadata."""

    path: Path
    meta: dict[str, Any]  # merged: _quarto.yml < format.html < front matter
    meta_dir: dict[str, Path]  # folder that relative paths in a key are resolved against
    cells: list[Cell]

    @classmethod
    def read(cls, path: Path, fmt: str = "html") -> QmdDoc:
        """Parse ``path`` for output format ``fmt`` (``"html"`` or ``"pdf"``)."""
        import jupytext

        text = path.read_text(encoding="utf-8")
        nb = jupytext.reads(text, fmt="Rmd")
        front: dict[str, Any] = {}
        cells: list[Cell] = []
        fence_lines = [
            (i + 1, m.group(2))
            for i, line in enumerate(text.splitlines())
            if (m := FENCE.match(line)) is not None
        ]
        n_code = 0
        for i, c in enumerate(nb.cells):
            if c.cell_type == "raw" and i == 0 and c.source.lstrip().startswith("---"):
                body = c.source.strip().strip("-")
                try:
                    front = yaml.safe_load(body) or {}
                except yaml.YAMLError as exc:
                    raise RenderError(
                        f"{path.name}: the YAML front matter does not parse: {exc}", qmd=path
                    ) from exc
                continue
            raw_format = str(c.metadata.get("language", "")) if c.cell_type == "code" else ""
            if raw_format.startswith("="):  # ```{=typst} raw block: Markdown, passed to pandoc
                cells.append(Cell("markdown", f"```{{{raw_format}}}\n{c.source}\n```\n"))
                continue
            if c.cell_type == "code":
                n_code += 1
                line, lang = fence_lines[n_code - 1] if n_code <= len(fence_lines) else (None, "")
                if lang and lang != "python":
                    raise RenderError(
                        f"{path.name}: chunk at line {line} is {{{lang}}}; "
                        "the built-in engine runs only {python} chunks",
                        qmd=path,
                    )
                options, code = split_options(c.source, path, n_code, line)
                cells.append(Cell("code", code, options, n_code, line))
            else:  # markdown, or raw text jupytext kept apart
                cells.append(Cell("markdown", c.source))
        if not isinstance(front, dict):
            raise RenderError(f"{path.name}: the front matter is not a mapping", qmd=path)

        project, project_dir = find_project(path.parent)
        meta: dict[str, Any] = {}
        meta_dir: dict[str, Path] = {}
        for layer, folder in ((project, project_dir), (front, path.parent)):
            raw_formats = layer.get("format")
            formats: dict[str, Any] = raw_formats if isinstance(raw_formats, dict) else {}
            fmt_keys = ("html",) if fmt == "html" else ("typst", "pdf")
            per_format = [formats[k] for k in fmt_keys if isinstance(formats.get(k), dict)]
            for source in (layer, *per_format):
                for key, value in source.items():
                    if key in ("format", "project"):
                        continue
                    if key == "execute" and isinstance(value, dict):
                        meta.setdefault("execute", {}).update(value)
                    else:
                        meta[key] = value
                        meta_dir[key] = folder
        return cls(path, meta, meta_dir, cells)

    def python_source(self) -> str:
        """The code cells as one Python module, in order, each under a comment naming it.

        What the kernel runs (less the renderer's own setup and injected parameters), for
        linters: ``make lint`` runs ruff and mypy on it. The parameters cell comes first, so
        imports below it are allowed (``E402``).
        """
        parts = [f'"""Code cells of {self.path.name}, extracted for ruff and mypy."""\n',
                 "# ruff: noqa: E402\n"]
        for c in self.cells:
            if c.kind == "code":
                parts.append(f"\n# {c.name}\n{c.source.rstrip()}\n")
        return "".join(parts)

    def execute_option(self, key: str, default: Any) -> Any:
        """An ``execute:`` option (``echo``, ``warning``, ...) or ``default``."""
        return (self.meta.get("execute") or {}).get(key, default)


def find_project(folder: Path) -> tuple[dict[str, Any], Path]:
    """The nearest ``_quarto.yml`` at or above ``folder`` and its folder (``{}`` if none)."""
    for d in (folder, *folder.parents):
        cfg = d / "_quarto.yml"
        if cfg.is_file():
            loaded = yaml.safe_load(cfg.read_text(encoding="utf-8")) or {}
            return (loaded if isinstance(loaded, dict) else {}), d
    return {}, folder


def split_options(source: str, qmd: Path, index: int, line: int | None) -> tuple[dict, str]:
    """Split a chunk into its ``#|`` options (parsed as YAML) and its code."""
    lines = source.splitlines()
    opt_lines: list[str] = []
    while lines and lines[0].startswith("#|"):
        opt_lines.append(lines.pop(0)[2:].removeprefix(" "))
    if not opt_lines:
        return {}, source
    try:
        options = yaml.safe_load("\n".join(opt_lines)) or {}
    except yaml.YAMLError as exc:
        where = f"code cell #{index}" + (f", line {line}" if line else "")
        raise RenderError(
            f"{qmd.name}: {where}: the '#|' options do not parse as YAML: {exc}", qmd=qmd
        ) from exc
    if not isinstance(options, dict):
        raise RenderError(
            f"{qmd.name}: code cell #{index}: '#|' options are not key: value", qmd=qmd
        )
    return options, "\n".join(lines)
