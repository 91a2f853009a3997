"""Count the package's lines and the share of them that are docstrings.

    .venv/bin/python bench/doc_lines.py            # analysis/ and models/
    .venv/bin/python bench/doc_lines.py analysis   # one folder (relative to the working folder)

A docstring is the first statement of a module, class or function when it is a string
constant (``ast.get_docstring``'s rule); its lines are the source lines that statement spans.
Lines are counted as ``wc -l`` counts them. Prints one row a folder and a total.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def docstring_lines(source: str) -> int:
    """Source lines spanned by the docstrings of a module's source text."""
    tree = ast.parse(source)
    total = 0
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body = node.body
        if body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                assert body[0].end_lineno is not None
                total += body[0].end_lineno - body[0].lineno + 1
    return total


def count(folder: Path) -> tuple[int, int]:
    """(lines, docstring lines) of every ``.py`` file below ``folder``."""
    lines = docs = 0
    for path in sorted(folder.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines += text.count("\n")
        docs += docstring_lines(text)
    return lines, docs


def main(argv: list[str]) -> None:
    folders = argv or ["analysis", "models"]
    all_lines = all_docs = 0
    for name in folders:
        lines, docs = count(Path(name) if Path(name).is_dir() else ROOT / name)
        all_lines += lines
        all_docs += docs
        print(f"{name:20} {lines:7,d} lines  {docs:6,d} docstring lines  {docs / lines:5.1%}")
    print(f"{'total':20} {all_lines:7,d} lines  {all_docs:6,d} docstring lines  {all_docs / all_lines:5.1%}")


if __name__ == "__main__":
    main(sys.argv[1:])
