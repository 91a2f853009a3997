"""The pipeline reads models through their declarations, never through their names.

No code under ``analysis/`` compares a value with a model's registry name, or fits or
looks up a model by a name written in the code: what a model needs and feeds is declared
in its ``SPEC`` (``models/spec.py``). And ``models/`` imports nothing from ``analysis``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from selfmodel import models

ROOT = Path(__file__).resolve().parents[2]
NAMES = set(models.REGISTRY)
LOOKUPS = {"fit", "get", "verdict", "register"}


REGISTRY_MODULES = {"models", "model_registry"}


def _literal_names(node: ast.AST) -> set[str]:
    """Model names written as the operand itself (``"sdt"`` or ``("sdt", "items")``)."""
    elts = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return {n.value for n in elts
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in NAMES}


def _about_a_model(node: ast.AST) -> bool:
    """Whether an operand names a model (``name``, ``model``, ``arm.model``, ``f.model`` ...)."""
    ident = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return "name" in ident.lower() or "model" in ident.lower()


def name_branches(path: Path) -> list[str]:
    """Comparisons with, and fits/lookups by, a model name literal in ``path``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            found = {v for o in operands for v in _literal_names(o)}
            if found and any(_about_a_model(o) for o in operands):
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} compares with {sorted(found)}")
        elif isinstance(node, ast.Call) and node.args:
            f = node.func
            registry_call = (isinstance(f, ast.Attribute) and f.attr in LOOKUPS
                             and getattr(f.value, "id", "") in REGISTRY_MODULES)
            bare_call = isinstance(f, ast.Name) and f.id in LOOKUPS - {"get"}
            first = node.args[0]
            if (registry_call or bare_call) and isinstance(first, ast.Constant) and first.value in NAMES:
                func = f.attr if isinstance(f, ast.Attribute) else f.id
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} {func}({first.value!r})")
    return out


def test_the_check_finds_a_branch(tmp_path: Path) -> None:
    probe = ROOT / "tests" / "fixtures" / "_name_branch_probe.py"
    probe.write_text('def f(name, data):\n    if name == "sdt":\n        return fit("scale", data)\n')
    try:
        found = name_branches(probe)
    finally:
        probe.unlink()
    assert len(found) == 2


def test_no_code_under_analysis_branches_on_a_model_name() -> None:
    found = [f for p in sorted((ROOT / "analysis").rglob("*.py")) for f in name_branches(p)]
    assert not found, "\n".join(found)


def _pipeline_module(name: str) -> bool:
    """``analysis...`` or ``selfmodel...`` outside ``selfmodel.models`` (the pipeline side)."""
    root, _, rest = name.partition(".")
    return root == "analysis" or (root == "selfmodel" and rest.split(".")[0] != "models")


def test_models_import_nothing_from_analysis() -> None:
    assert _pipeline_module("selfmodel.fitting.sampling") and _pipeline_module("selfmodel.fitting.sampling")
    assert not _pipeline_module("selfmodel.models.spec") and not _pipeline_module("models")
    for path in sorted((ROOT / "models").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                imported = [f"{node.module}.{a.name}" for a in node.names]
                assert not any(map(_pipeline_module, imported)), path
            elif isinstance(node, ast.Import):
                assert not any(_pipeline_module(a.name) for a in node.names), path
