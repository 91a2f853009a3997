"""Size limits of the code under ``analysis/`` and ``models/`` (issue 12).

A file holds one job and a function one step: no file under ``analysis/`` or ``models/``
above :data:`MAX_FILE_LINES` lines, no function above :data:`MAX_FUNCTION_LINES` lines
(counted from ``def`` to its last line, docstring included). ``analysis/render.py`` belongs
to the report layout and is measured like every other file.
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


def long_functions(path: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``file:line name (n lines)`` of each function in ``path`` longer than ``limit``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            n = (node.end_lineno or node.lineno) - node.lineno + 1
            if n > limit:
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_the_checker_finds_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    f = ROOT / "tests" / "fixtures" / "_long_function_probe.py"
    f.write_text(f"def long():\n{body}\n\n\ndef short():\n    return 1\n")
    try:
        found = long_functions(f)
    finally:
        f.unlink()
    assert len(found) == 1 and " long (81 lines)" in found[0]


def test_no_file_is_too_long() -> None:
    long = [f"{p.relative_to(ROOT)} ({n} lines)" for p in _files()
            if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES]
    assert not long, "split these files: " + ", ".join(long)


def test_no_function_is_too_long() -> None:
    long = [entry for p in _files() for entry in long_functions(p)]
    assert not long, "split these functions:\n" + "\n".join(long)
