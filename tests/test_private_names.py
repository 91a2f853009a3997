"""No module imports another module's private (underscore) name (issue 31).

A name that starts with ``_`` is its module's own; another module needing it is a sign that
the name is public (rename it) or that the code belongs in that module.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def private_imports(source: str) -> list[tuple[int, str, str]]:
    """``(line, module, name)`` of each ``from selfmodel... import _name`` in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] not in ("selfmodel", "analysis", "models"):
                continue
            found += [(node.lineno, node.module, a.name) for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_the_check_finds_a_private_import() -> None:
    src = "from selfmodel.records.ingest.discover import _Input, walk_folder\n"
    assert private_imports(src) == [(1, "selfmodel.records.ingest.discover", "_Input")]
    assert private_imports("from selfmodel.models import _common\nfrom os import _exit\n") == [
        (1, "selfmodel.models", "_common")]


def test_no_module_imports_a_private_name_of_another() -> None:
    found = [f"{p.relative_to(ROOT)}:{line} imports {name} from {module}"
             for p in sorted((ROOT / "analysis").rglob("*.py")) + sorted((ROOT / "models").rglob("*.py"))
             for line, module, name in private_imports(p.read_text())
             # a package's private module (``models/_common.py``) is shared within its package
             if not (name == "_common" or module.endswith("._common"))]
    assert not found, "\n".join(found)
