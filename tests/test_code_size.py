"""Size limits of the code under ``analysis/`` and ``models/`` (issue 12).

A file holds one job and a function one step: no file under ``analysis/`` or ``models/``
above :data:`MAX_FILE_LINES` lines, no function above :data:`MAX_FUNCTION_LINES` lines of
code (from ``def`` to its last line, the docstring not counted: a long numpydoc docstring
is documentation, not complexity).

There is no allowance: every file and every function is held to the limits.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("analysis", "models")
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 80



def _files() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from ``def`` to the function's end, without its docstring."""
    n = (node.end_lineno or node.lineno) - node.lineno + 1
    first = node.body[0] if node.body else None
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        n -= (first.end_lineno or first.lineno) - first.lineno + 1
    return n


def function_sizes(path: Path) -> dict[str, int]:
    """``file:function`` -> code lines of every function (methods as ``Class.method``)."""
    out: dict[str, int] = {}
    rel = path.relative_to(ROOT).as_posix()

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                out[f"{rel}:{prefix}{child.name}"] = code_lines(child)
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(ast.parse(path.read_text(), filename=str(path)), "")
    return out


def long_functions(path: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``file:function (n lines)`` of each function in ``path`` longer than ``limit``."""
    return [f"{k} ({n} lines)" for k, n in function_sizes(path).items() if n > limit]


def test_the_checker_finds_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    f = ROOT / "tests" / "fixtures" / "_long_function_probe.py"
    f.write_text(f"def long():\n{body}\n\n\ndef short():\n    return 1\n")
    try:
        found = long_functions(f)
    finally:
        f.unlink()
    assert len(found) == 1 and ":long (81 lines)" in found[0]


def test_no_file_is_too_long() -> None:
    long = [f"{p.relative_to(ROOT)} ({n} lines)" for p in _files()
            if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES]
    assert not long, "split these files: " + ", ".join(long)


def test_no_function_is_too_long() -> None:
    too_long = [line for p in _files() for line in long_functions(p)]
    assert not too_long, "split these functions:\n" + "\n".join(too_long)
