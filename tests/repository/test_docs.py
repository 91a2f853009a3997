"""The documentation in docs/ matches the code it describes."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from selfmodel import models
from selfmodel.cli import build_parser
from selfmodel.pipeline.stages import STAGES
from selfmodel.records.contract import STATUSES

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_cli_doc_lists_every_command_and_option() -> None:
    doc = (DOCS / "cli.md").read_text()
    for name, parser in _subcommands().items():
        assert f"`{name}" in doc, name
        for action in parser._actions:
            for opt in action.option_strings:
                if opt not in ("-h", "--help"):
                    assert opt in doc, f"{name} {opt}"


def test_models_help_names_the_default_list() -> None:
    (models_opt,) = [a for a in _subcommands()["run"]._actions if "--models" in a.option_strings]
    assert ",".join(models.DEFAULT_MODELS) in models_opt.help


def test_stage_map_names_every_stage_and_module() -> None:
    doc = (DOCS / "stages.md").read_text()
    for stage in STAGES:
        assert f"`{stage.__name__}`" in doc, stage.__name__
    rows = {line.split("|")[1].strip(): line for line in doc.splitlines() if line.startswith("| `")}
    for path in sorted((ROOT / "analysis").iterdir()):
        if path.name.startswith("_") or path.name == "data" or path.suffix not in (".py", ""):
            continue
        name = path.name if path.suffix else f"{path.name}/"
        (row,) = [r for key, r in rows.items() if f"`{name}`" in key] or [None]
        assert row is not None, f"docs/stages.md has no row for {name}"
        if path.is_dir():  # every module and subpackage of a package is named in its row
            for sub in sorted(path.iterdir()):
                if sub.name.startswith("_") or sub.suffix not in (".py", "") or sub.name == "__pycache__":
                    continue
                sub_name = sub.name if sub.suffix else f"{sub.name}/"
                assert f"`{sub_name}`" in row or f"`{sub.stem}`" in row, f"{name}{sub_name}"


def test_registry_doc_lists_every_model_and_spec_field() -> None:
    from dataclasses import fields

    from selfmodel.models.spec import ModelSpec

    doc = (DOCS / "registry.md").read_text()
    for name in models.REGISTRY:
        assert f"`{name}`" in doc, name
    for f in fields(ModelSpec):
        assert f"`{f.name}`" in doc, f.name


def test_readme_points_to_docs_and_its_layout_matches() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "DESIGN.md" not in readme
    for page in ("records.md", "cli.md", "results.md", "registry.md", "stages.md"):
        assert (DOCS / page).is_file(), page
        assert f"docs/{page}" in readme, page
    layout = readme.split("## Layout", 1)[1].split("```", 2)[1]
    for folder in ("analysis/", "models/", "reports/", "data_raw/", "tests/", "bench/",
                   "validation/", "docs/"):
        assert folder in layout, folder


def _doc_keys(doc: str, heading: str) -> set[str]:
    """The backticked first-column names of the table under ``heading`` in a doc."""
    section = doc.split(heading, 1)[1]
    table = section.split("\n\n", 2)[1]
    return set(re.findall(r"^\| `([^`]+)` \|", table, flags=re.M))


def test_mapping_doc_lists_exactly_the_parsers_keys() -> None:
    from selfmodel.records.importers.mapping import logs_spec as spec

    doc = (DOCS / "mapping.md").read_text()
    assert _doc_keys(doc, "## Top-level keys") == set(spec.TOP_KEYS)
    assert _doc_keys(doc, "## `[fields]`: the record fields") == set(spec.FIELDS)
    assert _doc_keys(doc, "### Field table keys") == set(spec.FIELD_KEYS)
    assert _doc_keys(doc, "### `normalize` steps") == set(spec.NORMALIZE_STEPS)
    assert _doc_keys(doc, "### `type` values") == set(spec.VALUE_TYPES)
    assert _doc_keys(doc, "## `[join]`: predictions in one log") == set(spec.JOIN_KEYS)


def test_records_mapping_doc_lists_exactly_the_parsers_keys() -> None:
    """Every table of a ``format = "records"`` mapping in docs/mapping.md is the parser's: the
    key lists of ``records_spec`` are the fields its TOML models accept, and the doc's."""
    from selfmodel.records.importers.mapping import records_spec as rs

    doc = (DOCS / "mapping.md").read_text()
    tables = {
        "## Top-level keys of a records mapping": (rs.RECORDS_KEYS, rs._File),
        "## `[confidence]`": (rs.CONFIDENCE_KEYS, rs._Confidence),
        "## `[answered]`": (rs.ANSWERED_KEYS, rs._Answered),
        "## `[prediction]`": (rs.PREDICTION_KEYS, rs._Prediction),
        "## `[join]` of a records mapping": (rs.JOIN_KEYS, rs._Join),
        "## `[path]`: fields from each file's path": (rs.PATH_KEYS, rs._Path),
        "## `[melt]`: a wide table": (rs.MELT_KEYS, rs._Melt),
        "## `[[rule]]`: a status, or leaving rows out": (rs.RULE_KEYS, rs._Rule),
    }
    for heading, (keys, model) in tables.items():
        assert set(model.model_fields) == set(keys), heading
        assert _doc_keys(doc, heading) == set(keys), heading
    section = doc.split("## `[[rule]]`: a status, or leaving rows out", 1)[1]
    actions = section.split("\n\n", 3)[2]
    assert set(re.findall(r"^\| `([^`]+)` \|", actions, flags=re.M)) == set(rs.RULE_ACTIONS)
    assert set(rs.RULE_ACTIONS) - {"excluded"} <= set(STATUSES)
