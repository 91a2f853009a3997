"""The code imports itself as ``selfmodel`` only (issue 13).

The checkout's folders ``analysis/`` and ``models/`` are installed as ``selfmodel`` and
``selfmodel.models``. An ``import analysis...`` or ``from models ...`` left anywhere would load
the same file a second time under another name (two copies of every registry and cache), and
would fail in an installed wheel, which has no top-level ``analysis`` or ``models``.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("analysis", "models", "tests", "bench", "validation", "reports")
OLD = ("analysis", "models")
A, M = OLD  # the test sources below spell the old names through these (the rename skips them)
#: Python written inside the report sources and the docs' code blocks.
TEXT_IMPORT = re.compile(
    r"^\s*(?:from\s+(?:analysis|models)(?:\.\w+)*\s+import\b|import\s+(?:analysis|models)\b)",
    re.MULTILINE)


def old_name_imports(source: str, filename: str = "<string>") -> list[tuple[int, str]]:
    """``(line, module)`` of every import of a top-level ``analysis``/``models`` module."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in OLD:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names if a.name.split(".")[0] in OLD)
    return found


def test_the_finder_sees_every_form() -> None:
    source = (f"import {A}.fit as f\nfrom {M} import scale\nimport {M}\n"
              "from selfmodel import models\nfrom selfmodel.models import sdt\nfrom . import x\n"
              f"def g():\n    from {A} import atomic\n")
    assert old_name_imports(source) == [(1, f"{A}.fit"), (2, M), (3, M), (8, A)]


def test_no_python_file_imports_the_folder_names() -> None:
    files = sorted(p for d in FOLDERS for p in (ROOT / d).rglob("*.py"))
    assert len(files) > 100
    found = [f"{p.relative_to(ROOT)}:{line}: {mod}" for p in files
             for line, mod in old_name_imports(p.read_text(encoding="utf-8"), str(p))]
    assert not found, "import these as selfmodel...:\n" + "\n".join(found)


def test_no_report_source_or_doc_imports_the_folder_names() -> None:
    texts = [*sorted((ROOT / "reports").rglob("*.qmd")), *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "tests" / "fixtures").rglob("*.qmd")), ROOT / "README.md"]
    assert TEXT_IMPORT.search(f"x\n    from {A}.render import PAGE\n")
    assert not TEXT_IMPORT.search("from selfmodel.report.render import PAGE\nfrom analysis of logs")
    found = [f"{p.relative_to(ROOT)}:{p.read_text(encoding='utf-8')[:m.start()].count(chr(10)) + 1}"
             for p in texts for m in TEXT_IMPORT.finditer(p.read_text(encoding="utf-8"))]
    assert not found, "import these as selfmodel...:\n" + "\n".join(found)


def test_every_package_folder_is_in_the_wheel() -> None:
    """A subpackage left out of pyproject's list would be missing from the wheel, silently."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    folders = {"analysis": "selfmodel", "models": "selfmodel.models", "reports": "selfmodel.reports"}
    expected = {
        ".".join([name, *init.parent.relative_to(ROOT / folder).parts])
        for folder, name in folders.items() for init in (ROOT / folder).rglob("__init__.py")
    }
    assert expected <= listed, f"add to [tool.setuptools] packages: {sorted(expected - listed)}"
    assert {k: v for k, v in config["package-dir"].items() if k in folders.values()} == {
        v: k for k, v in folders.items()}
