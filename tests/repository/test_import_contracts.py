"""The import contracts of ``make lint`` (``[tool.importlinter]`` in pyproject.toml) are about
whole packages: every package of ``selfmodel`` has its layer, and the report, which reads saved
results, may import no robustness or fitting code (docs/stages.md, "Packages")."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def test_the_layers_name_every_package_whole() -> None:
    (layers,) = [c for c in _contracts() if c["type"] == "layers"]
    named = [name.strip() for layer in layers["layers"] for name in layer.split("|")]
    analysis = ROOT / "analysis"
    packages = {f"selfmodel.{p.name}" for p in analysis.iterdir() if (p / "__init__.py").is_file()}
    modules = {f"selfmodel.{p.stem}" for p in analysis.glob("*.py") if p.stem != "__init__"}
    assert sorted(named) == sorted(packages | modules)  # each once, none a module inside a package


def test_the_report_may_import_no_robustness_or_fitting_code() -> None:
    (report,) = [c for c in _contracts()
                 if c["type"] == "forbidden" and c["source_modules"] == ["selfmodel.report"]]
    assert {"selfmodel.robustness", "selfmodel.fitting"} <= set(report["forbidden_modules"])
    assert not report.get("allow_indirect_imports") and not report.get("ignore_imports")
