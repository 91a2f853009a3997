"""Render Quarto reports (``reports/*.qmd``) to one self-contained HTML file or a PDF.

Quarto itself is used when it is on ``PATH``. Where it is not (it cannot be installed on the
project's machines), a built-in engine reproduces the part of Quarto the reports use:

1. the ``.qmd`` is read with jupytext (R Markdown reader: Quarto's ```` ```{python} ```` chunks
   with ``#| key: value`` option lines parse to the same cells), its YAML front matter merged
   over the nearest ``_quarto.yml``;
2. parameters are injected the Quarto/papermill way: a new cell right after the cell tagged
   ``parameters`` (``#| tags: [parameters]``);
3. the cells run in a fresh ``python3`` kernel whose interpreter is :data:`sys.executable`
   (no globally installed kernelspec needed), with the working directory set to the report's
   folder;
4. outputs become one Markdown document (figures as PNG files, tables as raw HTML, ``asis``
   output as Markdown) which pandoc turns into standalone HTML with every resource embedded and
   math as MathML, or into Typst that the ``typst`` package compiles to PDF.

Cell options honoured by the built-in engine
--------------------------------------------
``echo``, ``eval``, ``include``, ``output`` (``true``/``false``/``asis``), ``warning``,
``error``, ``label`` (``fig-*`` numbered figures, ``tbl-*`` numbered tables, usable as
``@fig-x``/``@tbl-x`` cross-references in the text), ``fig-cap``, ``fig-alt``, ``tbl-cap``,
``tags``. Document options: ``title``, ``subtitle``, ``author``, ``date`` (``today`` allowed),
``abstract``, ``lang``, ``toc``, ``toc-depth``, ``toc-title``, ``number-sections``, ``css`` and
``execute: {echo, warning, error}``, at the top level or under ``format: html:`` (for PDF:
``format: typst:`` or ``format: pdf:``), front matter over the nearest ``_quarto.yml``. Inline code
```` `{python} expr` ```` is evaluated; its value is inserted as escaped text unless it has a
Markdown representation (e.g. :class:`IPython.display.Markdown`).
"""

from __future__ import annotations

import base64
import datetime as _dt
import difflib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from analysis.atomic import atomic_path

__all__ = ["RenderError", "RenderResult", "escape_md", "render"]

#: Default stylesheet, used when neither the front matter nor ``_quarto.yml`` names one.
DEFAULT_CSS = Path(__file__).resolve().parents[1] / "reports" / "style.css"

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_INLINE = re.compile(r"`\{python\}\s+([^`]+?)`")
_XREF = re.compile(r"(?<![\w\\@])@((?:fig|tbl)-[A-Za-z0-9_-]*[A-Za-z0-9_])")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*\{([A-Za-z0-9_]+)")
_RESOURCE_TAG = re.compile(
    r"<(script|link|img|iframe|source|video|audio|embed|object|track)\b[^>]*?"
    r"\b(?:src|href|data|srcset|poster)\s*=\s*[\"']?\s*(?:https?:)?//",
    re.IGNORECASE,
)
_REMOTE_CSS = re.compile(r"(?:url\(\s*[\"']?\s*(?:https?:)?//|@import\s+[\"']?(?:https?:)?//)")
_MD_REMOTE_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?\s*(?:https?:)?//")
_MARKER = "\x1eSELFMODEL-INLINE\x1e"


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
class RenderResult:
    """What :func:`render` produced.

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
    """

    out_file: Path
    engine: Literal["quarto", "builtin"]
    seconds: float
    n_figures: int


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
    if not qmd.is_file():
        raise FileNotFoundError(f"Report source not found: {qmd}")
    if fmt not in ("html", "pdf"):
        raise ValueError(f"fmt must be 'html' or 'pdf', not {fmt!r}")
    if engine not in ("auto", "quarto", "builtin"):
        raise ValueError(f"engine must be 'auto', 'quarto' or 'builtin', not {engine!r}")
    params = dict(params or {})
    for key, value in params.items():
        if not key.isidentifier():
            raise ValueError(f"Parameter name {key!r} is not a Python identifier")
        if value is not None and not isinstance(value, str | int | float | bool):
            raise ValueError(
                f"Parameter {key!r} has type {type(value).__name__}; use str, int, float, bool"
            )

    quarto = shutil.which("quarto")
    if engine == "quarto" and quarto is None:
        raise FileNotFoundError("engine='quarto' but no 'quarto' executable is on PATH")
    if engine == "quarto" or (engine == "auto" and quarto is not None):
        assert quarto is not None
        _render_quarto(quarto, qmd, out_file, params, fmt, timeout, cwd)
        return RenderResult(out_file, "quarto", time.perf_counter() - start, 0)

    doc = _QmdDoc.read(qmd, fmt)
    workdir = Path(cwd).resolve() if cwd is not None else qmd.parent
    with tempfile.TemporaryDirectory(prefix="selfmodel-render-") as tmp:
        tmpdir = Path(tmp)
        nb = _build_notebook(doc, params)
        _execute(nb, doc, workdir, timeout, progress)
        markdown, n_figures = _assemble(doc, nb, fmt, tmpdir)
        if fmt == "html":
            _pandoc_html(doc, markdown, tmpdir, out_file)
        else:
            _typst_pdf(doc, markdown, tmpdir, out_file)
    return RenderResult(out_file, "builtin", time.perf_counter() - start, n_figures)


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


# --------------------------------------------------------------------------------------------
# reading the .qmd
# --------------------------------------------------------------------------------------------


@dataclass
class _Cell:
    kind: Literal["markdown", "code"]
    source: str  # code without the ``#|`` option lines
    options: dict[str, Any] = field(default_factory=dict)
    index: int = 0  # 1-based among code cells
    line: int | None = None  # line of the opening fence in the .qmd

    @property
    def name(self) -> str:
        label = self.options.get("label")
        where = f"code cell #{self.index}" + (f", line {self.line}" if self.line else "")
        return f"'{label}' ({where})" if label else where


@dataclass
class _QmdDoc:
    path: Path
    meta: dict[str, Any]  # merged: _quarto.yml < format.html < front matter
    meta_dir: dict[str, Path]  # folder that relative paths in a key are resolved against
    cells: list[_Cell]

    @classmethod
    def read(cls, path: Path, fmt: str = "html") -> _QmdDoc:
        import jupytext

        text = path.read_text(encoding="utf-8")
        nb = jupytext.reads(text, fmt="Rmd")
        front: dict[str, Any] = {}
        cells: list[_Cell] = []
        fence_lines = [
            (i + 1, m.group(2))
            for i, line in enumerate(text.splitlines())
            if (m := _FENCE.match(line)) is not None
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
            if c.cell_type == "code":
                n_code += 1
                line, lang = fence_lines[n_code - 1] if n_code <= len(fence_lines) else (None, "")
                if lang and lang != "python":
                    raise RenderError(
                        f"{path.name}: chunk at line {line} is {{{lang}}}; "
                        "the built-in engine runs only {python} chunks",
                        qmd=path,
                    )
                options, code = _split_options(c.source, path, n_code, line)
                cells.append(_Cell("code", code, options, n_code, line))
            else:  # markdown, or raw text jupytext kept apart
                cells.append(_Cell("markdown", c.source))
        if not isinstance(front, dict):
            raise RenderError(f"{path.name}: the front matter is not a mapping", qmd=path)

        project, project_dir = _find_project(path.parent)
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

    def execute_option(self, key: str, default: Any) -> Any:
        return (self.meta.get("execute") or {}).get(key, default)


def _find_project(folder: Path) -> tuple[dict[str, Any], Path]:
    for d in (folder, *folder.parents):
        cfg = d / "_quarto.yml"
        if cfg.is_file():
            loaded = yaml.safe_load(cfg.read_text(encoding="utf-8")) or {}
            return (loaded if isinstance(loaded, dict) else {}), d
    return {}, folder


def _split_options(source: str, qmd: Path, index: int, line: int | None) -> tuple[dict, str]:
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


# --------------------------------------------------------------------------------------------
# notebook construction and execution
# --------------------------------------------------------------------------------------------

_FIG_DPI = 144  # PNG resolution: sharp on high-density screens and on paper

_SETUP_CODE = f"""\
try:
    get_ipython().run_line_magic("matplotlib", "inline")
    get_ipython().run_line_magic("config", "InlineBackend.figure_formats = ['png']")
    get_ipython().run_line_magic(
        "config",
        "InlineBackend.print_figure_kwargs = {{'bbox_inches': 'tight', 'dpi': {_FIG_DPI}}}",
    )
except Exception:
    pass
"""


def _tags(options: Mapping[str, Any]) -> list[str]:
    tags = options.get("tags") or []
    return [tags] if isinstance(tags, str) else [str(t) for t in tags]


def _build_notebook(doc: _QmdDoc, params: Mapping[str, Any]) -> Any:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells.append(
        nbformat.v4.new_code_cell(_SETUP_CODE, metadata={"selfmodel": {"role": "setup"}})
    )

    param_cell = next(
        (
            i
            for i, c in enumerate(doc.cells)
            if c.kind == "code" and "parameters" in _tags(c.options)
        ),
        None,
    )
    if params and param_cell is not None:
        declared = _assigned_names(doc.cells[param_cell].source)
        for key in params:
            if key not in declared:
                hint = difflib.get_close_matches(key, sorted(declared), n=1)
                raise ValueError(
                    f"Parameter {key!r} is not set in the parameters cell of {doc.path.name} "
                    f"(it sets: {', '.join(sorted(declared)) or 'nothing'})"
                    + (f"; did you mean {hint[0]!r}?" if hint else "")
                )
    injected = "# Injected parameters\n" + "".join(f"{k} = {v!r}\n" for k, v in params.items())
    injected_cell = nbformat.v4.new_code_cell(
        injected, metadata={"selfmodel": {"role": "params"}, "tags": ["injected-parameters"]}
    )
    if params and param_cell is None:
        nb.cells.append(injected_cell)

    for i, cell in enumerate(doc.cells):
        if cell.kind == "markdown":
            exprs = _INLINE.findall(cell.source)
            if exprs:
                nb.cells.append(
                    nbformat.v4.new_code_cell(
                        _inline_code(exprs), metadata={"selfmodel": {"role": "inline", "cell": i}}
                    )
                )
            continue
        if cell.options.get("eval", True) is not False:
            tags = ["raises-exception"] if cell.options.get("error") is True else []
            nb.cells.append(
                nbformat.v4.new_code_cell(
                    cell.source, metadata={"selfmodel": {"role": "cell", "cell": i}, "tags": tags}
                )
            )
        if params and i == param_cell:
            nb.cells.append(injected_cell)
    return nb


def _assigned_names(code: str) -> set[str]:
    import ast

    names: set[str] = set()
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return names
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _inline_code(exprs: list[str]) -> str:
    body = ", ".join(f"({e})" for e in exprs)
    return (
        "def __selfmodel_inline(*values):\n"
        "    import json as _j\n"
        "    out = []\n"
        "    for v in values:\n"
        "        md = getattr(v, '_repr_markdown_', None)\n"
        "        r = md() if callable(md) else None\n"
        "        out.append({'md': r} if isinstance(r, str) else {'text': str(v)})\n"
        f"    print({_MARKER!r} + _j.dumps(out))\n"
        f"__selfmodel_inline({body},)\n"
        "del __selfmodel_inline\n"
    )


def _kernel_manager() -> Any:
    """A kernel manager whose ``python3`` kernel is this interpreter, whatever is installed."""
    import zmq
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    class _ThisPythonSpecs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
            return KernelSpec(
                argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                display_name=f"Python {sys.version_info.major}.{sys.version_info.minor}",
                language="python",
                env={
                    "PYDEVD_DISABLE_FILE_VALIDATION": "1",
                    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
                },
                metadata={"debugger": False, "supported_encryption": ["curve"]},
            )

    # CurveZMQ-encrypted sockets when libzmq supports it (the kernel otherwise warns that it
    # runs over unencrypted TCP).
    return AsyncKernelManager(
        kernel_name="python3",
        kernel_spec_manager=_ThisPythonSpecs(),
        transport_encryption="auto" if zmq.has("curve") else "disabled",
    )


def _execute(
    nb: Any,
    doc: _QmdDoc,
    workdir: Path,
    timeout: int,
    progress: Callable[[str], None] | None,
) -> None:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    client = NotebookClient(
        nb,
        km=_kernel_manager(),
        timeout=timeout,
        startup_timeout=120,
        allow_errors=False,
        record_timing=False,
        resources={"metadata": {"path": str(workdir)}},
    )
    deadline = time.monotonic() + timeout
    code_cells = [c for c in doc.cells if c.kind == "code"]
    # cleanup_kc: nbclient only shuts down kernels it created itself; this one is ours too.
    with client.setup_kernel(cwd=str(workdir), cleanup_kc=True):
        for index, nb_cell in enumerate(nb.cells):
            info = nb_cell.metadata.get("selfmodel", {})
            cell = doc.cells[info["cell"]] if "cell" in info else None
            if info.get("role") == "cell" and cell is not None and progress is not None:
                progress(f"[{cell.index}/{len(code_cells)}] {cell.options.get('label') or 'cell'}")
            client.timeout = max(1, int(deadline - time.monotonic()))
            try:
                client.execute_cell(nb_cell, index)
            except CellExecutionError as exc:
                what = _describe(doc, info, cell)
                detail = f"{exc.ename}: {exc.evalue}" if exc.ename else _last_line(str(exc))
                raise RenderError(
                    f"{doc.path.name}: {what} failed: {detail}",
                    qmd=doc.path,
                    cell=what,
                    detail=detail,
                ) from None
            except (CellTimeoutError, TimeoutError) as exc:
                what = _describe(doc, info, cell)
                raise RenderError(
                    f"{doc.path.name}: {what} did not finish: the report's {timeout} s "
                    "time limit ran out",
                    qmd=doc.path,
                    cell=what,
                    detail="timeout",
                ) from exc
            except DeadKernelError as exc:
                what = _describe(doc, info, cell)
                raise RenderError(
                    f"{doc.path.name}: the Python kernel died while running {what}",
                    qmd=doc.path,
                    cell=what,
                    detail="kernel died",
                ) from exc


def _describe(doc: _QmdDoc, info: Mapping[str, Any], cell: _Cell | None) -> str:
    role = info.get("role")
    if role == "params":
        return "the injected parameters cell"
    if role == "setup":
        return "the renderer's setup cell"
    if role == "inline":
        return f"inline `{{python}}` code in markdown block #{info['cell'] + 1}"
    return f"cell {cell.name}" if cell is not None else "a cell"


def _last_line(text: str) -> str:
    lines = [ln for ln in _ANSI.sub("", text).strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else text


# --------------------------------------------------------------------------------------------
# executed notebook -> Markdown
# --------------------------------------------------------------------------------------------


def _fence(text: str, cls: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{cls}\n{text.rstrip()}\n{ticks}\n"


def _as_text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def coalesce_streams(outputs: list[Any]) -> list[Any]:
    """Join consecutive stream outputs of the same stream (stdout or stderr) into one.

    The kernel may flush one cell's prints as several stream messages (it does under load);
    an ``asis`` cell's Markdown must not be cut where a flush happened to fall (a table split
    in two is two tables, or one without rows).
    """
    out: list[Any] = []
    for o in outputs:
        if (o.get("output_type") == "stream" and out and out[-1].get("output_type") == "stream"
                and out[-1].get("name") == o.get("name")):
            out[-1] = {**out[-1], "text": _as_text(out[-1].get("text", "")) + _as_text(o.get("text", ""))}
        else:
            out.append(o)
    return out


def _html_to_markdown(html: str) -> str:
    import pypandoc

    # ``style`` and ``script`` elements are presentation for the browser; drop them for Typst.
    html = re.sub(r"<(style|script)\b.*?</\1\s*>", "", html, flags=re.S | re.I)
    # Wrapper divs (pandas wraps its tables) would become fenced divs around the table.
    html = re.sub(r"</?div\b[^>]*>", "", html, flags=re.I)
    return pypandoc.convert_text(html, "markdown", format="html", extra_args=["--wrap=none"])


@dataclass
class _Piece:
    text: str
    markdown: bool  # cross-references are resolved in Markdown pieces, not code or data


def _assemble(doc: _QmdDoc, nb: Any, fmt: str, figdir: Path) -> tuple[str, int]:
    outputs: dict[int, list[Any]] = {}
    inline: dict[int, list[dict[str, str]]] = {}
    for nb_cell in nb.cells:
        info = nb_cell.metadata.get("selfmodel", {})
        if info.get("role") == "cell":
            outputs[info["cell"]] = coalesce_streams(list(nb_cell.get("outputs", [])))
        elif info.get("role") == "inline":
            for out in nb_cell.get("outputs", []):
                text = _as_text(out.get("text", ""))
                if out.get("output_type") == "stream" and _MARKER in text:
                    inline[info["cell"]] = json.loads(text.split(_MARKER, 1)[1])

    default_echo = doc.execute_option("echo", False)
    default_warning = doc.execute_option("warning", True)
    pieces: list[_Piece] = []
    numbers: dict[str, tuple[str, int]] = {}
    counters = {"fig": 0, "tbl": 0}
    n_images = 0

    for i, cell in enumerate(doc.cells):
        if cell.kind == "markdown":
            text = cell.source
            values = iter(inline.get(i, []))

            def _sub(_m: re.Match[str], values: Any = values) -> str:
                v = next(values, {"text": "?"})
                return v["md"] if "md" in v else escape_md(v["text"])

            pieces.append(_Piece(_INLINE.sub(_sub, text) + "\n", True))
            continue
        opts = cell.options
        if opts.get("include", True) is False:
            continue
        if opts.get("echo", default_echo) is True:
            pieces.append(_Piece(_fence(cell.source, "python"), False))
        output_opt = opts.get("output", True)
        if output_opt is False or opts.get("eval", True) is False:
            continue
        asis = output_opt == "asis"
        show_warnings = opts.get("warning", default_warning) is not False
        label = str(opts.get("label") or "")
        kind = label.split("-", 1)[0] if label.startswith(("fig-", "tbl-")) else ""

        images: list[Path] = []
        body: list[_Piece] = []
        for out in outputs.get(i, []):
            otype = out.get("output_type")
            if otype == "stream":
                text = _ANSI.sub("", _as_text(out.get("text", "")))
                if out.get("name") == "stderr":
                    if show_warnings and text.strip():
                        body.append(_Piece(_fence(text, "{.cell-output-stderr}"), False))
                elif asis:
                    body.append(_Piece(text + "\n", True))
                elif text.strip():
                    body.append(_Piece(_fence(text, "{.cell-output}"), False))
            elif otype == "error":
                tb = _ANSI.sub("", "\n".join(out.get("traceback", [])))
                body.append(_Piece(_fence(tb, "{.cell-output-error}"), False))
            elif otype in ("display_data", "execute_result"):
                data = out.get("data", {})
                for mime, ext in (("image/png", "png"), ("image/jpeg", "jpg")):
                    if mime in data:
                        n_images += 1
                        path = figdir / f"figure-{n_images}.{ext}"
                        path.write_bytes(base64.b64decode(_as_text(data[mime])))
                        images.append(path)
                        break
                else:
                    if "text/markdown" in data:
                        body.append(_Piece(_as_text(data["text/markdown"]) + "\n", True))
                    elif "text/html" in data:
                        html = _as_text(data["text/html"])
                        if fmt == "html":
                            body.append(_Piece(_fence(html, "{=html}"), False))
                        else:
                            body.append(_Piece(_html_to_markdown(html) + "\n", False))
                    elif "text/plain" in data:
                        text = _as_text(data["text/plain"])
                        body.append(
                            _Piece(text + "\n", True)
                            if asis
                            else _Piece(_fence(text, "{.cell-output}"), False)
                        )

        cap = opts.get("fig-cap")
        if images:
            number = ""
            if kind == "fig":
                counters["fig"] += 1
                numbers[label] = ("Figure", counters["fig"])
                # Typst numbers figures itself; HTML gets Quarto's "Figure N: " prefix.
                number = f"Figure {counters['fig']}: " if fmt == "html" else ""
            for k, img in enumerate(images):
                attrs = []
                if kind == "fig" and k == 0:
                    attrs.append(f"#{label}")
                width = _display_width(img)
                if width:
                    attrs.append(f"width={width}px")
                alt = opts.get("fig-alt") or cap
                if alt:
                    attrs.append(f"alt={json.dumps(_plain(str(alt)))}")
                caption = f"{number}{cap}" if cap and k == len(images) - 1 else ""
                attr = "{" + " ".join(attrs) + "}" if attrs else ""
                if caption or attr:
                    pieces.append(_Piece(f"![{caption}]({img.name}){attr}\n", True))
                else:  # an image alone with no caption must not become a figure
                    pieces.append(_Piece(f"![]({img.name})\\\n", True))
        if kind == "tbl":
            counters["tbl"] += 1
            numbers[label] = ("Table", counters["tbl"])
            tcap = opts.get("tbl-cap") or ""
            # One layout for both formats: a div carrying the label, caption above the table.
            # (For Typst this keeps the label even when the output is not a pandoc table.)
            head = f"Table {counters['tbl']}: {tcap}" if tcap else ""
            pieces.append(_Piece(f":::: {{#{label} .quarto-table}}\n", False))
            if head:
                pieces.append(_Piece(f"::: {{.table-caption}}\n{head}\n:::\n", True))
            pieces.extend(body)
            pieces.append(_Piece("::::\n", False))
        else:
            pieces.extend(body)

    def _xref(m: re.Match[str]) -> str:
        label = m.group(1)
        if label not in numbers:
            return f"?\\@{label}"
        word, n = numbers[label]
        return f"[{word} {n}](#{label})"

    parts = [_XREF.sub(_xref, p.text) if p.markdown else p.text for p in pieces]
    markdown = "\n".join(parts)
    if _MD_REMOTE_IMAGE.search(markdown) or _RESOURCE_TAG.search(markdown):
        raise RenderError(
            f"{doc.path.name}: the report refers to a remote resource (an http(s) src/href); "
            "reports must be self-contained",
            qmd=doc.path,
        )
    return markdown, n_images


def _display_width(png: Path) -> int | None:
    """CSS width of a figure drawn at :data:`_FIG_DPI`, shown at the web's 96 px per inch."""
    head = png.read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return round(int.from_bytes(head[16:20], "big") * 96 / _FIG_DPI)


def _plain(text: str) -> str:
    """Strip the most common Markdown marks so a caption reads well as alt text."""
    return re.sub(r"[*_`]|\$", "", text).strip()


# --------------------------------------------------------------------------------------------
# Markdown -> HTML / PDF
# --------------------------------------------------------------------------------------------


def _metadata_block(doc: _QmdDoc) -> str:
    keep = ("title", "subtitle", "author", "date", "abstract", "lang", "toc-title", "keywords")
    meta = {k: doc.meta[k] for k in keep if k in doc.meta}
    if str(meta.get("date", "")).strip().lower() in ("today", "now", "last-modified"):
        meta["date"] = _dt.date.today().isoformat()
    if not meta.get("title"):
        meta["pagetitle"] = doc.path.stem
    meta.setdefault("lang", "en")
    return "---\n" + yaml.safe_dump(meta, allow_unicode=True, sort_keys=False) + "---\n\n"


def _toc_args(doc: _QmdDoc, markdown: str) -> list[str]:
    args = []
    has_headings = re.search(r"^#{1,6}\s", markdown, flags=re.M) is not None
    if doc.meta.get("toc", True) is not False and has_headings:
        args += ["--toc", f"--toc-depth={int(doc.meta.get('toc-depth', 3))}"]
    if doc.meta.get("number-sections") is True:
        args.append("--number-sections")
    return args


def _css_files(doc: _QmdDoc) -> list[Path]:
    css = doc.meta.get("css")
    if not css:
        return [DEFAULT_CSS] if DEFAULT_CSS.is_file() else []
    base = doc.meta_dir.get("css", doc.path.parent)
    files = [(base / c).resolve() for c in ([css] if isinstance(css, str) else css)]
    for f in files:
        if not f.is_file():
            raise RenderError(f"{doc.path.name}: stylesheet not found: {f}", qmd=doc.path)
    return files


def _pandoc(source: Path, to: str, args: list[str], doc: _QmdDoc, cwd: Path) -> str:
    import pypandoc

    # pandoc (from pypandoc-binary) runs in the folder holding the figures, so the relative
    # image paths resolve for --embed-resources and for Typst. No os.chdir in this process.
    cmd = [pypandoc.get_pandoc_path(), str(source), "--from=markdown", f"--to={to}", *args]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, check=False)
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise RenderError(
            f"{doc.path.name}: pandoc failed (exit {proc.returncode}): {err}", qmd=doc.path
        )
    return proc.stdout.decode("utf-8")


def _pandoc_html(doc: _QmdDoc, markdown: str, tmpdir: Path, out_file: Path) -> None:
    source = tmpdir / "report.md"
    source.write_text(_metadata_block(doc) + markdown, encoding="utf-8")
    args = [
        "--standalone",
        "--embed-resources",
        "--mathml",
        "--wrap=none",
        *_toc_args(doc, markdown),
    ]
    for css in _css_files(doc):
        args.append(f"--css={css}")
    html = _pandoc(source, "html5", args, doc, tmpdir)
    for pattern in (_RESOURCE_TAG, _REMOTE_CSS):
        if (m := pattern.search(html)) is not None:
            raise RenderError(
                f"{doc.path.name}: the rendered HTML still loads a remote resource "
                f"({html[m.start() : m.end() + 40]!r}); it would not be self-contained",
                qmd=doc.path,
            )
    with atomic_path(out_file) as target:
        target.write_text(html, encoding="utf-8")


def _typst_pdf(doc: _QmdDoc, markdown: str, tmpdir: Path, out_file: Path) -> None:
    import typst

    source = tmpdir / "report.md"
    source.write_text(_metadata_block(doc) + markdown, encoding="utf-8")
    typ_text = _pandoc(source, "typst", ["--standalone", *_toc_args(doc, markdown)], doc, tmpdir)
    typ = tmpdir / "report.typ"
    typ.write_text(typ_text, encoding="utf-8")
    try:
        pdf = typst.compile(str(typ), root=str(tmpdir))
    except Exception as exc:  # typst raises its own TypstError (a RuntimeError subclass)
        raise RenderError(
            f"{doc.path.name}: Typst could not compile the PDF: {_last_line(str(exc))}",
            qmd=doc.path,
        ) from exc
    assert isinstance(pdf, bytes)
    with atomic_path(out_file) as target:
        target.write_bytes(pdf)
