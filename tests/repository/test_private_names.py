"""No module imports another module's private (underscore) name (issue 31).

A name that starts with ``_`` is its module's own; another module needing it is a sign that
the name is public (rename it) or that the code belongs in that module.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def private_imports(source: str) -> list[tuple[int, str, str]]:
    """``(line, module, name)`` of each ``from selfmodel... import _name`` in ``source``, and of
    each name imported from a private module (``from selfmodel.x._y import name``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] not in ("selfmodel", "analysis", "models"):
                continue
            private_module = any(_private(part) for part in node.module.split("."))
            found += [(node.lineno, node.module, a.name) for a in node.names
                      if private_module or _private(a.name)]
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_the_check_finds_a_private_import() -> None:
    src = "from selfmodel.records.ingest.discover import _Input, walk_folder\n"
    assert private_imports(src) == [(1, "selfmodel.records.ingest.discover", "_Input")]
    assert private_imports("from selfmodel.models import _common\nfrom os import _exit\n") == [
        (1, "selfmodel.models", "_common")]
    assert private_imports("from selfmodel.models._common import prior_rv\n"
                           "from selfmodel.models.graph import prior_rv\n") == [
        (1, "selfmodel.models._common", "prior_rv")]


def test_no_module_imports_a_private_name_of_another() -> None:
    found = [f"{p.relative_to(ROOT)}:{line} imports {name} from {module}"
             for p in sorted((ROOT / "analysis").rglob("*.py")) + sorted((ROOT / "models").rglob("*.py"))
             for line, module, name in private_imports(p.read_text())]
    assert not found, "\n".join(found)
