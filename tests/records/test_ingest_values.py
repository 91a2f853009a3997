"""Identifiers and values that are no identifier or no value, in every reader (issue 50).

* an identifier (``model``, ``predictor``, ``task``, ``item_id``, ``run_id``, ``cluster``,
  ``condition``) holding a control character (a NUL byte ...) or no visible character (a
  zero-width space ...) is quarantined as ``invalid identifier``; so is such a registry name,
  an error at its line;
* a list or an object in a value column (``prediction``, ``outcome``, ``correct``,
  ``confidence``, ``status``, ``sample``) is quarantined as ``invalid value``;
* NaN and infinity in a numeric column (``confidence``, ``sample``) are quarantined, in any
  spelling and type, never read as missing; in a text column ``NaN`` stays a missing value.

Each case is one bad row between two good ones, written by every reader: JSONL read whole by
polars, JSONL read line by line (a broken last line sends the file there), CSV, Parquet
(typed columns where the case is typed) and the gzip files; and DuckDB's ``reduce`` gives
the same accounting.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from selfmodel.records.contract import InputError
from selfmodel.records.engines import reduce_records
from selfmodel.records.ingest import ingest
from selfmodel.records.registry import load_registry

READERS = ("jsonl", "jsonl_line_by_line", "csv", "parquet", "jsonl.gz", "csv.gz")
ID_COLUMNS = ("model", "predictor", "task", "item_id", "run_id", "cluster", "condition")
VALUE_COLUMNS = ("prediction", "outcome", "correct", "confidence", "status", "sample")


def _good(i: int) -> dict[str, Any]:
    return {"model": "m1", "predictor": "m1", "task": "refusal", "item_id": f"q{i}",
            "run_id": "r1", "cluster": "c1", "condition": "plain", "prediction": "yes",
            "outcome": "yes", "correct": True, "confidence": 0.5, "status": "ok", "sample": 0}


def _rows(column: str, value: Any) -> list[dict[str, Any]]:
    bad = _good(1)
    bad[column] = value
    return [_good(0), bad, _good(2)]


def _csv_text(value: Any) -> str:
    if isinstance(value, list | dict):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _write(folder: Path, reader: str, rows: list[dict[str, Any]],
           json_texts: dict[str, str] | None = None) -> Path:
    """``rows`` as a file read by ``reader``; ``json_texts``: a column's raw JSON text."""
    columns = list(rows[0])
    if reader.startswith("jsonl"):
        lines = []
        for row in rows:
            parts = [f"{json.dumps(k)}: " + (json_texts[k] if json_texts and k in json_texts
                                             and row is rows[1] else json.dumps(row[k]))
                     for k in columns]
            lines.append("{" + ", ".join(parts) + "}")
        if reader == "jsonl_line_by_line":
            lines.append('{"model": "m1"')  # a broken line: the file is read line by line
        data = ("\n".join(lines) + "\n").encode("utf-8")
        if reader == "jsonl.gz":
            path = folder / "r.jsonl.gz"
            path.write_bytes(gzip.compress(data))
        else:
            path = folder / "r.jsonl"
            path.write_bytes(data)
        return path
    if reader.startswith("csv"):
        buffer = io.StringIO(newline="")
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([[_csv_text(row[k]) for k in columns] for row in rows])
        data = buffer.getvalue().encode("utf-8")
        if reader == "csv.gz":
            path = folder / "r.csv.gz"
            path.write_bytes(gzip.compress(data))
        else:
            path = folder / "r.csv"
            path.write_bytes(data)
        return path
    frame = pl.DataFrame({k: [row[k] for row in rows] for k in columns},
                         strict=False)
    path = folder / "r.parquet"
    frame.write_parquet(path)
    return path


def _quarantined(path: Path, reader: str) -> tuple[list[tuple[int, str]], dict[str, Any]]:
    res = ingest([path])
    s = res.summary
    assert s["records_read"] == s["records_used"] + s["records_quarantined"] + s["records_duplicate"]
    rows = res.quarantine.select("source_line", "reason").rows()
    if reader == "jsonl_line_by_line":  # the broken line is quarantined too
        assert rows[-1][1].startswith("invalid JSON")
        rows = rows[:-1]
    return rows, s


def _bad_line(reader: str) -> int:
    return 3 if reader.startswith("csv") else 2


# --------------------------------------------------------------------------- identifiers

#: A name that holds a control character, or has no visible character.
BAD_NAMES = {
    "nul": ("m\x001", "(it holds a control character, shown as \ufffd"),
    "bell": ("\x07m1", "(it holds a control character"),
    "c1_control": ("m\x9b1", "(it holds a control character"),
    "zero_width_space": ("\u200b", "(no visible character"),
    "joiners_and_spaces": ("\u200d \u2060\ufeff\u00ad", "(no visible character"),
}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("column", ID_COLUMNS)
@pytest.mark.parametrize("kind", list(BAD_NAMES))
def test_an_identifier_with_a_control_or_no_visible_character_is_quarantined(
    kind: str, column: str, reader: str, tmp_path: Path
) -> None:
    value, why = BAD_NAMES[kind]
    path = _write(tmp_path, reader, _rows(column, value))
    rows, s = _quarantined(path, reader)
    assert [line for line, _ in rows] == [_bad_line(reader)], rows
    reason = rows[0][1]
    assert reason.startswith(f"invalid {column}") and why in reason, reason
    assert "\x00" not in reason  # the reason shows control characters as U+FFFD
    assert s["quarantine_reasons"].get("invalid identifier") == 1
    assert s["records_used"] == 2


@pytest.mark.parametrize("column", ID_COLUMNS)
def test_white_space_and_invisible_characters_inside_a_visible_name_are_kept(
    column: str, tmp_path: Path
) -> None:
    """Tab, line feed and format characters inside a name are not control characters: the
    white-space and look-alike rules apply to them (README "model names that look alike")."""
    path = _write(tmp_path, "jsonl", _rows(column, "a\tb\u200bc\nd"))
    res = ingest([path])
    assert res.summary["records_quarantined"] == 0
    assert "a\tb\u200bc\nd" in res.records.get_column(column).to_list()


@pytest.mark.parametrize("reader", ["jsonl", "csv", "parquet"])
@pytest.mark.parametrize("kind", ["nul", "c1_control", "zero_width_space"])
def test_duckdb_quarantines_the_same_identifiers(kind: str, reader: str, tmp_path: Path) -> None:
    value, _ = BAD_NAMES[kind]
    rows = [_good(0)]
    for i, column in enumerate(ID_COLUMNS, start=1):
        bad = _good(i)
        bad[column] = value
        rows.append(bad)
    path = _write(tmp_path, reader, rows)
    res = ingest([path])
    got = reduce_records([path], engine="duckdb", engine_options={"threads": 1})
    assert res.summary["quarantine_reasons"] == {"invalid identifier": len(ID_COLUMNS)}
    for key in ("records_read", "records_used", "records_quarantined", "quarantine_reasons",
                "models", "tasks"):
        assert got.summary[key] == res.summary[key], key


@pytest.mark.parametrize("column", ["model", "family", "base_model", "intervention"])
@pytest.mark.parametrize("kind", ["nul", "bell", "zero_width_space", "joiners_and_spaces"])
@pytest.mark.parametrize("suffix", [".csv", ".toml"])
def test_a_registry_name_with_a_control_or_no_visible_character_is_an_error_at_its_line(
    column: str, kind: str, suffix: str, tmp_path: Path
) -> None:
    value, _ = BAD_NAMES[kind]
    rows = [{"model": "base", "family": "f"},
            {"model": "m1", "family": "f", "base_model": "base", "intervention": "sft"}]
    rows[1][column] = value
    if column == "base_model":
        rows[0]["model"] = value  # the base it names exists: only the name is wrong
    path = tmp_path / f"reg{suffix}"
    if suffix == ".csv":
        header = ["model", "family", "base_model", "intervention"]
        buffer = io.StringIO(newline="")
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(header)
        writer.writerows([[row.get(k, "") for k in header] for row in rows])
        path.write_text(buffer.getvalue(), encoding="utf-8")
        line = 3 if column != "base_model" else 2
    else:
        path.write_text("".join("[[model]]\n" + "".join(
            f"{k} = {json.dumps(v)}\n" for k, v in row.items()) for row in rows), encoding="utf-8")
        # the second [[model]] is line 4; base_model: the first table's model (line 2)
        line = {"model": 5, "family": 6, "base_model": 2, "intervention": 8}[column]
    with pytest.raises(InputError) as info:
        load_registry(path)
    message = str(info.value)
    assert "\n" not in message and "\x00" not in message
    assert f"line {line}, column '{'model' if column == 'base_model' else column}'" in message
    assert ("holds a control character" in message) == (kind in ("nul", "bell")), message
    assert ("has no visible character" in message) == (kind not in ("nul", "bell")), message


# --------------------------------------------------------------------------- values

NESTED = {"array": ["yes"], "object": {"v": "yes"}}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("column", VALUE_COLUMNS)
@pytest.mark.parametrize("kind", list(NESTED))
def test_a_list_or_object_in_a_value_column_is_quarantined(
    kind: str, column: str, reader: str, tmp_path: Path
) -> None:
    rows = _rows(column, NESTED[kind])
    if reader == "parquet":  # a typed list or struct column: its other values null
        for row in (rows[0], rows[2]):
            row[column] = None
    path = _write(tmp_path, reader, rows)
    rows_q, s = _quarantined(path, reader)
    assert [line for line, _ in rows_q] == [_bad_line(reader)], rows_q
    reason = rows_q[0][1]
    assert reason.startswith(f"invalid {column} '") and "(a list or object is not one value" in reason
    assert s["quarantine_reasons"].get("invalid value") == 1


#: NaN and infinity as JSON literals (written raw), strings, and typed doubles (Parquet).
NOT_FINITE_JSON = ("NaN", "Infinity", "-Infinity")
NOT_FINITE_TEXT = ("nan", " NAN ", "-inf", "+Infinity")


def _numeric_reason(column: str) -> str:
    return ("(not a finite number: NaN and infinity are never a confidence"
            if column == "confidence" else "(not a number: NaN and infinity are never a sample")


@pytest.mark.parametrize("reader", ["jsonl", "jsonl_line_by_line", "jsonl.gz"])
@pytest.mark.parametrize("column", ["confidence", "sample"])
@pytest.mark.parametrize("literal", NOT_FINITE_JSON)
def test_a_json_nan_or_infinity_in_a_numeric_column_is_quarantined(
    literal: str, column: str, reader: str, tmp_path: Path
) -> None:
    path = _write(tmp_path, reader, _rows(column, 0), json_texts={column: literal})
    rows, s = _quarantined(path, reader)
    assert [line for line, _ in rows] == [2], rows
    assert rows[0][1].startswith(f"invalid {column} '") and _numeric_reason(column) in rows[0][1]
    assert s["quarantine_reasons"] == {f"invalid {column}": 1} | (
        {"invalid JSON": 1} if reader == "jsonl_line_by_line" else {})


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("column", ["confidence", "sample"])
@pytest.mark.parametrize("spelling", NOT_FINITE_TEXT)
def test_nan_or_infinity_text_in_a_numeric_column_is_quarantined(
    spelling: str, column: str, reader: str, tmp_path: Path
) -> None:
    path = _write(tmp_path, reader, _rows(column, spelling))
    rows, _ = _quarantined(path, reader)
    assert [line for line, _ in rows] == [_bad_line(reader)], rows
    assert f"invalid {column} '{spelling.strip()}'" in rows[0][1]
    assert _numeric_reason(column) in rows[0][1]


@pytest.mark.parametrize("column", ["confidence", "sample"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_typed_nan_or_infinity_in_a_numeric_parquet_column_is_quarantined(
    column: str, value: float, tmp_path: Path
) -> None:
    rows = _rows(column, value)
    for row in rows:
        row[column] = float(row[column])  # a Float64 column
    path = _write(tmp_path, "parquet", rows)
    res = ingest([path])
    assert res.quarantine.get_column("source_line").to_list() == [2]
    assert _numeric_reason(column) in res.quarantine.get_column("reason")[0]
    got = reduce_records([path], engine="duckdb", engine_options={"threads": 1})
    assert got.summary["quarantine_reasons"] == res.summary["quarantine_reasons"]


@pytest.mark.parametrize("reader", READERS)
def test_nan_in_a_text_column_is_still_a_missing_value(reader: str, tmp_path: Path) -> None:
    """``prediction`` NaN: no prediction (unreadable, kept); ``correct`` NaN: not given."""
    rows = _rows("prediction", "NaN")
    rows[1]["correct"] = None
    rows[2]["correct"] = "nan"
    path = _write(tmp_path, reader, rows)
    res = ingest([path])
    rows_q = res.quarantine.filter(~pl.col("reason").str.starts_with("invalid JSON"))
    assert rows_q.height == 0, rows_q.rows()
    assert res.summary["unreadable_predictions"] == 1 and res.summary["records_used"] == 3
