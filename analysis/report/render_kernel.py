"""Build the notebook for a report and execute it in a fresh kernel (built-in engine).

Parameters are injected the Quarto/papermill way (a new cell right after the cell tagged
``parameters``). The cells run in a ``python3`` kernel whose interpreter is
:data:`sys.executable`, with the working directory set to the report's folder. A setup cell
first makes matplotlib draw PNGs at :data:`~selfmodel.report.render_base.FIG_DPI` and sets the default
figure size to the document's ``fig-width`` x ``fig-height`` (inches; Quarto's option names),
whose default is the width of the PDF text block: a figure drawn at the default width is shown
at its drawn size, fonts included, in the PDF and in the HTML column.
"""

from __future__ import annotations

import difflib
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from selfmodel.report.render_base import FIG_DPI, INLINE, MARKER, PAGE, RenderError, last_line
from selfmodel.report.render_qmd import Cell, QmdDoc


def figure_size(doc: QmdDoc) -> tuple[float, float]:
    """Default figure size in inches: ``fig-width``/``fig-height``, else the text block width."""
    width = doc.meta.get("fig-width", PAGE.fig_width_in)
    height = doc.meta.get("fig-height", round(PAGE.fig_width_in * 0.55, 2))
    try:
        return float(width), float(height)
    except (TypeError, ValueError):
        raise RenderError(
            f"{doc.path.name}: fig-width/fig-height must be numbers (inches), "
            f"not {width!r}/{height!r}",
            qmd=doc.path,
        ) from None


def setup_code(doc: QmdDoc) -> str:
    """Source of the renderer's first cell: PNG figures at the document's size and resolution."""
    width, height = figure_size(doc)
    return f"""\
try:
    get_ipython().run_line_magic("matplotlib", "inline")
    get_ipython().run_line_magic("config", "InlineBackend.figure_formats = ['png']")
    get_ipython().run_line_magic(
        "config",
        "InlineBackend.print_figure_kwargs = {{'bbox_inches': 'tight', 'dpi': {FIG_DPI}}}",
    )
    import matplotlib as _mpl

    _mpl.rcParams["figure.figsize"] = ({width!r}, {height!r})
    del _mpl
except Exception:
    pass
"""


def _tags(options: Mapping[str, Any]) -> list[str]:
    tags = options.get("tags") or []
    return [tags] if isinstance(tags, str) else [str(t) for t in tags]


def build_notebook(doc: QmdDoc, params: Mapping[str, Any]) -> Any:
    """The notebook to run: setup cell, the code cells, injected parameters, inline code."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells.append(
        nbformat.v4.new_code_cell(setup_code(doc), metadata={"selfmodel": {"role": "setup"}})
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
            exprs = INLINE.findall(cell.source)
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
        f"    print({MARKER!r} + _j.dumps(out))\n"
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


def execute(
    nb: Any,
    doc: QmdDoc,
    workdir: Path,
    timeout: int,
    progress: Callable[[str], None] | None,
) -> None:
    """Run every cell of ``nb`` in a fresh kernel; a failing cell raises :class:`RenderError`."""
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
    # The kernel's own stdout/stderr go to a file, never to the user's terminal: on Ctrl-C
    # it would print its traceback there; when it dies its last line names the cause.
    with tempfile.TemporaryFile() as kernel_log, client.setup_kernel(
        cwd=str(workdir), cleanup_kc=True, stdout=kernel_log, stderr=kernel_log
    ):
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
                detail = f"{exc.ename}: {exc.evalue}" if exc.ename else last_line(str(exc))
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
                said = kernel_said(kernel_log)
                raise RenderError(
                    f"{doc.path.name}: the Python kernel died while running {what}"
                    + (f" ({said})" if said else ""),
                    qmd=doc.path,
                    cell=what,
                    detail="kernel died",
                ) from exc


def kernel_said(log: IO[bytes]) -> str:
    """The last non-empty line the kernel wrote to its stdout/stderr (``""`` if none)."""
    try:
        log.seek(0)
        text = log.read()[-4096:].decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""
    return last_line(text) if text.strip() else ""


def _describe(doc: QmdDoc, info: Mapping[str, Any], cell: Cell | None) -> str:
    role = info.get("role")
    if role == "params":
        return "the injected parameters cell"
    if role == "setup":
        return "the renderer's setup cell"
    if role == "inline":
        return f"inline `{{python}}` code in markdown block #{info['cell'] + 1}"
    return f"cell {cell.name}" if cell is not None else "a cell"
