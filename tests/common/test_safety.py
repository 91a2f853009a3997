"""Data never reaches eval, exec, pickle or a shell; writes are atomic."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from selfmodel.common import atomic

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*(ROOT / "analysis").rglob("*.py"), *(ROOT / "models").rglob("*.py")])
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__"}
FORBIDDEN_MODULES = {"pickle", "cPickle", "dill", "shelve", "marshal"}


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(ROOT)) for p in SOURCES])
def test_no_eval_pickle_or_shell(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in FORBIDDEN_CALLS, f"{path}:{node.lineno} calls {node.func.id}"
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            )
            assert not FORBIDDEN_MODULES & {n.split(".")[0] for n in names}, f"{path}:{node.lineno}"
        if isinstance(node, ast.keyword) and node.arg == "shell":
            assert not (isinstance(node.value, ast.Constant) and node.value.value), (
                f"{path}:{node.lineno} shell=True"
            )
        if isinstance(node, ast.Attribute) and node.attr in {"system", "popen"}:
            assert not (isinstance(node.value, ast.Name) and node.value.id == "os"), (
                f"{path}:{node.lineno}"
            )


def test_interrupted_write_leaves_the_old_file(tmp_path):
    target = tmp_path / "results.json"
    atomic.write_json(target, {"a": 1})

    def boom(tmp):
        tmp.write_text('{"half": ')
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic.write_with(target, boom)
    assert target.read_text() == '{\n  "a": 1\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temporary left behind
