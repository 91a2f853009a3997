"""Registry columns in the records (``family``, ``params_b`` ...) are compared with the registry
and every disagreement is said, never ignored without a word (issue 50).

The registry wins: a model's family, size and flags come from it only; the records' column
is listed in ``ignored_columns`` and each kind of disagreement (a value that ``differs`` from
the model's registry row, a value for a model ``not_in_registry``) is one line on the console
and one entry of ``ingest.json`` ``registry_contradictions``, with counts and an example.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from selfmodel.cli import main
from selfmodel.pipeline.stages import stage_ingest
from selfmodel.pipeline.state import RunConfig, RunState
from selfmodel.records.ingest import ingest
from selfmodel.records.ingest.discover import Inputs

REGISTRY = "model,family,params_b,open_weights\nm1,llama,8,yes\nm2,qwen,70,no\n"


def _rows() -> list[dict[str, Any]]:
    base = {"task": "refusal", "prediction": "yes", "outcome": "yes"}
    return [
        {**base, "model": "m1", "item_id": "1", "family": "llama", "params_b": 8, "open_weights": True},
        {**base, "model": "m1", "item_id": "2", "family": " llama ", "params_b": "8.0",
         "open_weights": "YES"},  # the same values, written otherwise: agree
        {**base, "model": "m1", "item_id": "3", "family": "mistral", "params_b": 8},
        {**base, "model": "m1", "item_id": "4", "family": "mistral", "params_b": "8B"},
        {**base, "model": "m2", "item_id": "1", "family": "qwen", "params_b": 7},
        {**base, "model": "m3", "item_id": "1", "family": "gpt", "params_b": None},
    ]


def _write(folder: Path, fmt: str) -> Path:
    rows = _rows()
    if fmt == "jsonl":
        path = folder / "r.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif fmt == "csv":
        path = folder / "r.csv"
        pl.DataFrame([{k: (None if v is None else str(v)) for k, v in r.items()} for r in rows],
                     infer_schema_length=None).write_csv(path)
    else:
        path = folder / "r.parquet"
        pl.DataFrame([{**r, "params_b": None if r.get("params_b") is None else str(r["params_b"])}
                      for r in rows], infer_schema_length=None).write_parquet(path)
    return path


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_contradictions_are_counted_with_an_example_and_the_registry_wins(
    fmt: str, tmp_path: Path
) -> None:
    reg = tmp_path / "reg.csv"
    reg.write_text(REGISTRY)
    res = ingest([_write(tmp_path, fmt)], registry=reg)
    s = res.summary
    assert {"family", "params_b"} <= set(s["ignored_columns"])
    assert s["registry_columns_in_records"]["family"] == {
        "rows": 6, "agree": 3, "differ": 2, "not_in_registry": 1}
    assert s["registry_columns_in_records"]["params_b"] == {
        "rows": 5, "agree": 3, "differ": 1 + 1, "not_in_registry": 0}
    notes = {(n["column"], n["kind"]): n for n in s["registry_contradictions"]}
    assert set(notes) == {("family", "differs"), ("family", "not_in_registry"),
                          ("params_b", "differs")}
    family = notes[("family", "differs")]
    assert (family["models"], family["rows"]) == (1, 2)
    assert family["example"] == {"model": "m1", "records": "mistral", "file": str(tmp_path / f"r.{fmt}"),
                                 "line": 4 if fmt == "csv" else 3, "registry": "llama"}
    assert "the registry's value is used" in family["text"].lower()
    size = notes[("params_b", "differs")]
    assert (size["models"], size["rows"]) == (2, 2)  # m1 '8B' (no number), m2 7 against 70
    assert "records column 'params_b' differs from the registry" in size["text"]
    assert notes[("family", "not_in_registry")]["example"]["model"] == "m3"
    # the registry wins: nothing of the records' columns reaches the records
    assert "family" not in res.records.columns


def test_without_a_registry_the_columns_are_said_to_be_unused(tmp_path: Path) -> None:
    res = ingest([_write(tmp_path, "jsonl")])
    notes = res.summary["registry_contradictions"]
    assert [(n["column"], n["kind"], n["models"]) for n in notes] == [
        ("family", "not_in_registry", 3), ("open_weights", "not_in_registry", 1),
        ("params_b", "not_in_registry", 2)]
    assert "is read from a registry only" in notes[0]["text"]


def test_records_that_agree_with_the_registry_say_nothing(tmp_path: Path) -> None:
    reg = tmp_path / "reg.csv"
    reg.write_text(REGISTRY)
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _rows()[:2]))
    s = ingest([path], registry=reg).summary
    assert s["registry_contradictions"] == []
    assert s["registry_columns_in_records"]["family"]["agree"] == 2


def test_ingest_says_each_kind_on_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                           ) -> None:
    reg = tmp_path / "reg.csv"
    reg.write_text(REGISTRY)
    out = tmp_path / "out"
    assert main(["ingest", str(_write(tmp_path, "jsonl")), "--registry", str(reg),
                 "--out", str(out)]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("records column")]
    assert len(lines) == 3, lines
    assert lines[0].startswith("records column 'family' differs from the registry")
    assert "1 model (2 rows), e.g. model 'm1': 'mistral'" in lines[0]
    saved = json.loads((out / "ingest.json").read_text())
    assert [n["text"] for n in saved["registry_contradictions"]] == lines


def test_run_says_them_after_the_counts(tmp_path: Path) -> None:
    reg = tmp_path / "reg.csv"
    reg.write_text(REGISTRY)
    state = RunState(config=RunConfig(out=tmp_path / "out"),
                     inputs=Inputs([_write(tmp_path, "csv")], reg, None))
    (tmp_path / "out").mkdir()
    said: list[str] = []
    stage_ingest(state, said.append)
    notes = [s for s in said if s.startswith("records column")]
    assert len(notes) == 3 and "records read 6" in " ".join(said)
