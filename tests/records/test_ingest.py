"""Ingestion: formats, column mapping, each validation rule, duplicates, accounting,
determinism, the data hash, options and error messages."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from selfmodel.records.contract import QUARANTINE_SCHEMA, RECORD_SCHEMA, InputError
from selfmodel.records.ingest import (
    IngestConfig,
    IngestResult,
    ingest,
    load_config,
    parse_map_options,
    write_ingest,
)

BASE = {"model": "m1", "task": "refusal", "prediction": "yes", "outcome": "yes"}


def _jsonl(path: Path, rows: list[dict[str, Any] | str]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _rows(n: int, **extra: Any) -> list[dict[str, Any]]:
    return [{**BASE, "item_id": f"q{i}", **extra} for i in range(n)]


def _balanced(result: IngestResult) -> None:
    s = result.summary
    assert (
        s["records_read"] == s["records_used"] + s["records_quarantined"] + s["records_duplicate"]
    )
    assert result.records.height == s["records_used"]
    assert result.quarantine.height == s["records_quarantined"]
    json.dumps(s, allow_nan=False)  # JSON-serialisable, no NaN


def _one(tmp_path: Path, row: dict[str, Any], **kwargs: Any) -> IngestResult:
    """Ingest one interesting row next to one plain valid row (so ingest never fails)."""
    path = _jsonl(tmp_path / "r.jsonl", [{**BASE, "item_id": "anchor"}, row])
    result = ingest([path], **kwargs)
    _balanced(result)
    return result


def _reason(tmp_path: Path, row: dict[str, Any], **kwargs: Any) -> str:
    result = _one(tmp_path, row, **kwargs)
    assert result.quarantine.height == 1, result.quarantine
    assert result.quarantine.get_column("source_line").to_list() == [2]
    return result.quarantine.get_column("reason")[0]


def _record(tmp_path: Path, row: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    result = _one(tmp_path, {"item_id": "x", **row}, **kwargs)
    assert result.quarantine.height == 0, result.quarantine
    return result.records.filter(pl.col("item_id") == "x").row(0, named=True)


def _input_error(*args: Any, **kwargs: Any) -> str:
    with pytest.raises(InputError) as info:
        ingest(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


# --------------------------------------------------------------------------- formats


def test_same_records_from_jsonl_csv_and_parquet(tmp_path: Path) -> None:
    rows = [
        {**BASE, "item_id": "a", "confidence": 0.25, "sample": 1, "cluster": "c1", "run_id": "r"},
        {**BASE, "item_id": "b", "prediction": "no", "outcome": "yes", "predictor": "m2"},
        {**BASE, "item_id": "c", "prediction": None, "status": "refused"},
    ]
    _jsonl(tmp_path / "r.jsonl", rows)
    frame = pl.DataFrame(rows, schema={k: pl.Utf8 for k in rows[0] | rows[1] | rows[2]})
    frame.write_csv(tmp_path / "r.csv")
    typed = frame.with_columns(
        pl.col("confidence").cast(pl.Float64), pl.col("sample").cast(pl.Int32)
    )
    typed.write_parquet(tmp_path / "r.parquet")
    results = [ingest([tmp_path / f"r.{ext}"]) for ext in ("jsonl", "csv", "parquet")]
    for result in results:
        _balanced(result)
        assert dict(result.records.schema) == RECORD_SCHEMA
        assert list(result.records.columns) == list(RECORD_SCHEMA)
        assert dict(result.quarantine.schema) == QUARANTINE_SCHEMA
    frames = [r.records.drop("source_file", "source_line") for r in results]
    assert frames[0].equals(frames[1]) and frames[0].equals(frames[2])
    assert [r.summary["files"][0]["format"] for r in results] == ["jsonl", "csv", "parquet"]
    assert results[1].records.get_column("source_line").to_list() == [2, 4, 3]  # by KEY
    assert results[2].records.get_column("source_line").to_list() == [1, 3, 2]


def test_parquet_typed_columns_and_bad_values(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {
            "model": ["m1", "m1", "m1", None],
            "task": ["t"] * 4,
            "item_id": [1, 2, 3, 4],
            "prediction": [True, False, True, True],
            "outcome": [True, True, True, True],
            "confidence": [0.5, 1.7, float("nan"), 0.1],
            "sample": [0.0, 1.0, 2.0, 3.0],
        }
    )
    frame.write_parquet(tmp_path / "p.parquet")
    result = ingest([tmp_path / "p.parquet"])
    _balanced(result)
    # a NaN confidence is no number (as "NaN" in a CSV): quarantined, not read as missing
    assert result.records.select(
        "item_id", "prediction", "outcome", "correct", "sample", "confidence"
    ).rows() == [("1", "true", "true", True, 0, 0.5)]
    assert result.quarantine.select("source_line", "reason").rows() == [
        (2, "invalid confidence '1.7' (must be a finite number in [0, 1])"),
        (3, "invalid confidence 'NaN' (not a finite number: NaN and infinity are never a "
            "confidence; leave it empty or write null for none)"),
        (4, "missing value in required column 'model'"),
    ]
    raw = json.loads(result.quarantine.get_column("raw")[0])
    assert raw["confidence"] == 1.7 and raw["item_id"] == 2


def test_corrupt_parquet_is_input_error(tmp_path: Path) -> None:
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    message = _input_error([tmp_path / "bad.parquet"])
    assert "bad.parquet: cannot read Parquet" in message


def test_folder_recursion_sorted_hidden_and_other_files_skipped(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / ".hidden").mkdir()
    _jsonl(data / "b.jsonl", _rows(1))
    _jsonl(data / "sub" / "a.ndjson", [{**BASE, "item_id": "z"}])
    _jsonl(data / ".hidden" / "x.jsonl", [{**BASE, "item_id": "hidden"}])
    _jsonl(data / ".dot.jsonl", [{**BASE, "item_id": "dot"}])
    (data / "notes.txt").write_text("ignored")
    result = ingest([data])
    paths = [f["path"] for f in result.summary["files"]]
    assert paths == [(data / "b.jsonl").as_posix(), (data / "sub" / "a.ndjson").as_posix()]
    assert sorted(result.records.get_column("item_id")) == ["q0", "z"]


def test_same_file_twice_is_read_once(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "r.jsonl", _rows(2))
    result = ingest([path, tmp_path, str(path)])
    assert result.summary["records_read"] == 2 and result.summary["records_duplicate"] == 0


def test_jsonl_blank_lines_crlf_bom_keep_line_numbers(tmp_path: Path) -> None:
    text = "\ufeff" + json.dumps({**BASE, "item_id": "a"}) + "\r\n\r\n   \n"
    text += json.dumps({**BASE, "item_id": "b", "confidence": 2}) + "\r\n"
    (tmp_path / "r.jsonl").write_text(text, encoding="utf-8")
    result = ingest([tmp_path / "r.jsonl"])
    _balanced(result)
    assert result.summary["records_read"] == 2
    assert result.records.get_column("source_line").to_list() == [1]
    assert result.quarantine.get_column("source_line").to_list() == [4]


def test_jsonl_bad_lines_in_a_large_file_are_found_by_line(tmp_path: Path) -> None:
    rows: list[dict[str, Any] | str] = list(_rows(1000))
    rows[9] = '{"model": "m1", "task": '
    rows[499] = "[1, 2]"
    rows[998] = '{"model": "m1"} trailing'
    result = ingest([_jsonl(tmp_path / "r.jsonl", rows)])
    _balanced(result)
    assert result.quarantine.select("source_line", "reason").rows() == [
        (10, "invalid JSON (Expecting value at column 25)"),
        (500, "not a JSON object (got array)"),
        (999, "invalid JSON (Extra data at column 17)"),
    ]
    assert result.summary["records_used"] == 997


def test_jsonl_values_of_any_json_type(tmp_path: Path) -> None:
    rows = [
        {
            "model": "m1",
            "task": "t",
            "item_id": 17,
            "prediction": 1,
            "outcome": True,
            "sample": "2",
            "confidence": "0.5",
        },
        {
            "model": "m1",
            "task": "t",
            "item_id": "18",
            "prediction": {"words": ["a", "b"]},
            "outcome": ["a", "b"],
            "sample": 1.0,
        },
    ]
    result = ingest([_jsonl(tmp_path / "r.jsonl", rows)])
    recs = result.records.select("item_id", "prediction", "outcome", "sample", "confidence")
    assert recs.rows() == [("17", "true", "true", 2, 0.5)]
    # an object or array is not one value: quarantined, never scored as its JSON text
    assert result.quarantine.select("source_line", "reason").rows() == [
        (2, 'invalid prediction \'{"words": ["a", "b"]}\' (a list or object is not one '
            "value; write the value itself)")]


def test_csv_quoted_newlines_keep_line_numbers(tmp_path: Path) -> None:
    text = (
        "model,task,item_id,prediction,outcome,confidence\n"
        'm1,t,a,"two\nlines",x,0.5\n'
        "m1,t,b,yes,yes,7\n"
    )
    (tmp_path / "r.csv").write_text(text, encoding="utf-8")
    result = ingest([tmp_path / "r.csv"])
    _balanced(result)
    assert result.records.select("prediction", "source_line").rows() == [("two\nlines", 2)]
    assert result.quarantine.select("source_line", "raw").rows() == [(4, "m1,t,b,yes,yes,7")]


def test_csv_blank_lines_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "r.csv").write_text(
        "model,task,item_id,prediction,outcome\nm1,t,a,y,y\n\n , , ,,\nm1,t,b,n,y\n"
    )
    result = ingest([tmp_path / "r.csv"])
    assert result.summary["records_read"] == 2
    assert result.records.get_column("source_line").to_list() == [2, 5]


def test_csv_invalid_utf8_header_is_input_error(tmp_path: Path) -> None:
    (tmp_path / "r.csv").write_bytes(b"mod\xffel,task,item_id\nm1,t,a\n")
    message = _input_error([tmp_path / "r.csv"])
    assert "r.csv: line 1:" in message and "UTF-8" in message


def test_csv_duplicate_header_is_input_error(tmp_path: Path) -> None:
    (tmp_path / "r.csv").write_text("model,task,item_id,model\nm1,t,a,m2\n")
    message = _input_error([tmp_path / "r.csv"])
    assert "line 1, column 'model': duplicate column name" in message


def test_csv_column_without_a_name_is_read_by_its_position(tmp_path: Path) -> None:
    """R's write.csv writes its row names under an empty name: that column is column_1."""
    (tmp_path / "r.csv").write_text('"","model","task","item_id","prediction","outcome"\n'
                                    '"1","m1","t","a","yes","yes"\n"2","m1","t","b","no","yes"\n')
    result = ingest([tmp_path / "r.csv"], mapping={"sample": "column_1"})
    assert result.summary["records_used"] == 2
    assert result.records.get_column("sample").to_list() == [1, 2]
    plain = ingest([tmp_path / "r.csv"])
    assert plain.summary["ignored_columns"] == ["column_1"]
    (tmp_path / "s.csv").write_text("model,,task,column_2\nm1,x,t,y\n")  # the name is taken
    assert "line 1, column 'column_2': duplicate column name" in _input_error([tmp_path / "s.csv"])


def test_raw_is_truncated(tmp_path: Path) -> None:
    result = _one(tmp_path, {**BASE, "item_id": "x", "confidence": 5, "cluster": "c" * 2000})
    raw = result.quarantine.get_column("raw")[0]
    assert len(raw) == 500 and raw.startswith('{"model": "m1"')


# --------------------------------------------------------------------------- columns


def test_missing_required_column_message(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("model,task,question_id,prediction,outcome\nm1,t,a,y,y\n")
    message = _input_error([path])
    assert message.startswith(f"{path.as_posix()}: line 1, column 'item_id': ")
    assert "present: model, task, question_id, prediction, outcome" in message
    assert message.endswith("Map it with --map item_id=question_id.")


def test_missing_required_column_jsonl_suggests_closest(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "r.jsonl", [{"target_model": "m", "task": "t", "item_id": "a", "outcome": "y"}]
    )
    message = _input_error([path])
    assert "column 'model': required column 'model' is missing" in message
    assert "--map model=target_model" in message


def test_mapping_renames_and_ignored_columns_are_listed(tmp_path: Path) -> None:
    rows = [
        {
            "model": "m1",
            "task": "t",
            "qid": "a",
            "item_id": "old",
            "pred": "y",
            "outcome": "y",
            "extra": 1,
        }
    ]
    path = _jsonl(tmp_path / "r.jsonl", rows)
    result = ingest([path], mapping={"item_id": "qid", "prediction": "pred"})
    assert result.records.select("item_id", "prediction").row(0) == ("a", "true")
    assert result.summary["ignored_columns"] == ["extra", "item_id"]
    assert result.summary["mapping"] == {"item_id": "qid", "prediction": "pred"}


def test_one_source_column_may_feed_two_canonical_columns(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "r.jsonl",
        [{"m": "x", "task": "t", "item_id": "a", "outcome": "y", "prediction": "y"}],
    )
    result = ingest([path], mapping={"model": "m", "predictor": "m"})
    assert result.records.select("model", "predictor").row(0) == ("x", "x")


def test_mapped_column_missing_is_input_error(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "r.jsonl", _rows(1))
    message = _input_error([path], mapping={"item_id": "question_id"})
    assert "column 'question_id': mapped column 'question_id'" in message
    assert "Drop --map item_id=question_id" in message
    message = _input_error([path], mapping={"confidence": "prob"})
    assert "column 'prob'" in message


def test_mapping_argument_is_checked(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "r.jsonl", _rows(1))
    assert "Did you mean 'item_id'?" in _input_error([path], mapping={"itemid": "x"})


def test_config_map_tasks_and_defaults(tmp_path: Path) -> None:
    cfg = tmp_path / "ingest.toml"
    cfg.write_text(
        'tasks = ["refusal"]\n[map]\nitem_id = "qid"\n[defaults]\ntask = "refusal"\nsample = 3\n'
    )
    rows = [{"model": "m1", "qid": "a", "prediction": "y", "outcome": "y"}]
    result = ingest([_jsonl(tmp_path / "r.jsonl", rows)], config=cfg)
    assert result.records.select("task", "item_id", "sample").row(0) == ("refusal", "a", 3)
    assert result.summary["allowed_tasks"] == ["refusal"]
    assert result.summary["defaults"] == {"sample": "3", "task": "refusal"}
    # the mapping argument overrides the config's [map]
    rows2 = [{"model": "m1", "other": "b", "prediction": "y", "outcome": "y"}]
    result2 = ingest(
        [_jsonl(tmp_path / "r2.jsonl", rows2)], config=cfg, mapping={"item_id": "other"}
    )
    assert result2.records.get_column("item_id").to_list() == ["b"]


def test_ingest_config_object_is_accepted(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "r.jsonl", [*_rows(2), {**BASE, "item_id": "z", "task": "other"}])
    result = ingest([path], config=IngestConfig(tasks=("refusal",)))
    assert result.summary["records_used"] == 2
    assert result.summary["quarantine_reasons"] == {"unknown task": 1}


# --------------------------------------------------------------------------- validation rules


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"model": "", "item_id": "x"}, "missing value in required column 'model'"),
        ({"model": "   ", "item_id": "x"}, "missing value in required column 'model'"),
        ({"task": None, "item_id": "x"}, "missing value in required column 'task'"),
        ({"item_id": ""}, "missing value in required column 'item_id'"),
        ({"item_id": "x", "status": "crashed"}, "invalid status 'crashed'"),
        ({"item_id": "x", "confidence": 1.7}, "invalid confidence '1.7'"),
        ({"item_id": "x", "confidence": -0.01}, "invalid confidence '-0.01'"),
        ({"item_id": "x", "confidence": "-inf"}, "invalid confidence '-inf'"),
        ({"item_id": "x", "confidence": "sure"}, "invalid confidence 'sure'"),
        ({"item_id": "x", "confidence": True}, "invalid confidence 'true'"),
        ({"item_id": "x", "sample": -1}, "invalid sample '-1'"),
        ({"item_id": "x", "sample": 1.5}, "invalid sample '1.5'"),
        ({"item_id": "x", "sample": "two"}, "invalid sample 'two'"),
        ({"item_id": "x", "correct": "maybe"}, "invalid correct 'maybe'"),
        ({"item_id": "x", "outcome": None}, "no outcome and no correct"),
        ({"item_id": "x", "outcome": "  "}, "no outcome and no correct"),
        (
            {"item_id": "x", "prediction": "yes", "outcome": "no", "correct": True},
            "correct disagrees with prediction == outcome (correct=true, prediction='true', "
            "outcome='false')",
        ),
    ],
)
def test_each_rule_quarantines_with_its_reason(
    tmp_path: Path, row: dict[str, Any], expected: str
) -> None:
    assert expected in _reason(tmp_path, {**BASE, **row})


def test_unknown_task_needs_config(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('tasks = ["refusal", "difficulty"]\n')
    reason = _reason(tmp_path, {**BASE, "item_id": "x", "task": "refusl"}, config=cfg)
    assert reason == "unknown task 'refusl' (configured tasks: refusal, difficulty)"
    assert _record(tmp_path, {**BASE, "task": "refusl"})["task"] == "refusl"  # no config


def test_first_failing_rule_wins_and_categories_are_counted(tmp_path: Path) -> None:
    result = _one(tmp_path, {**BASE, "model": "", "item_id": "x", "confidence": 9})
    assert result.quarantine.get_column("reason")[0].startswith("missing value")
    assert result.summary["quarantine_reasons"] == {"missing value": 1}


@pytest.mark.parametrize(
    ("prediction", "expected"),
    [
        ("YES", "true"),
        (" no ", "false"),
        ("1", "true"),
        (0, "false"),
        (True, "true"),
        ("T", "true"),
        ("mane", "mane"),
        ("  Mane  ", "Mane"),
        ("<b>x</b>", "<b>x</b>"),
    ],
)
def test_prediction_encoding(tmp_path: Path, prediction: Any, expected: str) -> None:
    assert _record(tmp_path, {**BASE, "prediction": prediction})["prediction"] == expected


def test_correct_is_derived_or_kept(tmp_path: Path) -> None:
    assert _record(tmp_path, {**BASE, "prediction": "yes", "outcome": "No"})["correct"] is False
    assert _record(tmp_path, {**BASE, "prediction": "Lion", "outcome": "lion"})["correct"] is False
    assert _record(tmp_path, {**BASE, "outcome": "yes", "correct": "YES"})["correct"] is True
    given_only = _record(tmp_path, {**BASE, "outcome": None, "correct": 0})
    assert given_only["correct"] is False and given_only["outcome"] is None


def test_missing_prediction_becomes_unparsed(tmp_path: Path) -> None:
    result = _one(tmp_path, {**BASE, "item_id": "x", "prediction": None})
    rec = result.records.filter(pl.col("item_id") == "x").row(0, named=True)
    assert rec["status"] == "unparsed" and rec["correct"] is None
    assert result.summary["unreadable_predictions"] == 1
    assert result.summary["statuses"] == {"ok": 1, "unparsed": 1}


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_row_with_only_correct_keeps_it(tmp_path: Path, fmt: str) -> None:
    """README: prediction + outcome, or correct. A row giving only correct is readable."""
    rows = [{"model": "m1", "task": "t", "item_id": f"i{i}", "correct": c}
            for i, c in enumerate([True, False, True])]
    path = tmp_path / f"r.{fmt}"
    if fmt == "jsonl":
        _jsonl(path, rows)
    else:
        pl.DataFrame(rows).write_csv(path)
    result = ingest([path])
    assert result.records.get_column("correct").to_list() == [True, False, True]
    assert result.records.get_column("status").to_list() == ["ok"] * 3
    assert result.summary["unreadable_predictions"] == 0


@pytest.mark.parametrize("missing", ["NaN", "nan", " None ", "null", "NULL", ""])
def test_missing_spellings_are_missing_predictions(tmp_path: Path, missing: str) -> None:
    rec = _record(tmp_path, {**BASE, "prediction": missing})
    assert rec["prediction"] is None and rec["status"] == "unparsed" and rec["correct"] is None


@pytest.mark.parametrize(("pred", "out"), [("1.0", "True"), (" 0.0 ", "FALSE"), (1.0, True),
                                           ("0.0", False), (" yes", "true"), ("1", "TRUE")])
def test_numbers_and_spellings_are_booleans(tmp_path: Path, pred: Any, out: Any) -> None:
    rec = _record(tmp_path, {**BASE, "prediction": pred, "outcome": out})
    assert rec["prediction"] in ("true", "false") and rec["outcome"] in ("true", "false")
    truth = str(pred).strip().lower() in ("1.0", "1", "yes")
    assert rec["correct"] is (truth == (str(out).strip().lower() == "true"))


def test_non_boolean_prediction_in_binary_task_is_unreadable(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "r.jsonl", [
        {**BASE, "item_id": "a", "prediction": "yes", "outcome": "true"},
        {**BASE, "item_id": "b", "prediction": "maybe", "outcome": "true"},
        {**BASE, "task": "words", "item_id": "c", "prediction": "cat", "outcome": "dog"},
    ])
    result = ingest([path])
    rows = {r["item_id"]: r for r in result.records.iter_rows(named=True)}
    assert rows["b"]["status"] == "unparsed" and rows["b"]["correct"] is None
    assert rows["b"]["prediction"] == "maybe"  # the text is kept for the audit
    assert rows["c"]["status"] == "ok" and rows["c"]["correct"] is False  # not a binary task
    assert result.summary["predictions_not_boolean"] == {BASE["task"]: 1}
    assert result.summary["unreadable_predictions"] == 1


def test_status_is_case_insensitive_and_not_ok_has_no_correct(tmp_path: Path) -> None:
    rec = _record(tmp_path, {**BASE, "prediction": "no", "status": "REFUSED"})
    assert rec["status"] == "refused" and rec["correct"] is None
    assert _record(tmp_path, {**BASE, "status": None})["status"] == "ok"


def test_defaults_for_optional_columns(tmp_path: Path) -> None:
    rec = _record(tmp_path, dict(BASE))
    assert rec["predictor"] == "m1" and rec["sample"] == 0 and rec["confidence"] is None
    assert rec["source_line"] == 2 and rec["source_file"].endswith("r.jsonl")


@pytest.mark.parametrize("sample", [2, "2", " 2 ", 2.0, "2.0", "+2"])
def test_sample_accepts_integers_and_integral_strings(tmp_path: Path, sample: Any) -> None:
    assert _record(tmp_path, {**BASE, "sample": sample})["sample"] == 2


@pytest.mark.parametrize("confidence", [0, 1, "0.0", "1", 0.5, " 0.25 ", "1e-3"])
def test_confidence_bounds_are_inclusive(tmp_path: Path, confidence: Any) -> None:
    value = _record(tmp_path, {**BASE, "confidence": confidence})["confidence"]
    assert value == pytest.approx(float(str(confidence).strip()))


def test_markup_and_formulas_are_kept_verbatim(tmp_path: Path) -> None:
    for text in ["<script>alert(1)</script>", "=cmd|' /C calc'!A0", "**bold** _x_", "@SUM(A1)"]:
        rec = _record(tmp_path, {**BASE, "prediction": text, "outcome": text, "cluster": text})
        assert rec["prediction"] == rec["outcome"] == rec["cluster"] == text
        assert rec["correct"] is True


# --------------------------------------------------------------------------- duplicates


def test_exact_duplicates_are_counted_once(tmp_path: Path) -> None:
    rows = _rows(2) + [_rows(2)[1], _rows(2)[1]]
    result = ingest([_jsonl(tmp_path / "r.jsonl", rows)])
    _balanced(result)
    s = result.summary
    assert (s["records_read"], s["records_used"], s["records_duplicate"]) == (4, 2, 2)
    assert result.records.get_column("source_line").to_list() == [1, 2]


def test_conflicting_duplicates_quarantine_all_copies(tmp_path: Path) -> None:
    rows = [
        {**BASE, "item_id": "a"},
        {**BASE, "item_id": "a", "outcome": "no"},
        {**BASE, "item_id": "a"},
        {**BASE, "item_id": "b", "confidence": 0.5},
        {**BASE, "item_id": "b", "confidence": 0.6},
        {**BASE, "item_id": "c"},
    ]
    result = ingest([_jsonl(tmp_path / "r.jsonl", rows)])
    _balanced(result)
    name = (tmp_path / "r.jsonl").as_posix()
    assert result.quarantine.select("source_line", "reason").rows() == [
        (1, f"conflicting duplicate of {name}:2"),
        (2, f"conflicting duplicate of {name}:1"),
        (3, f"conflicting duplicate of {name}:1"),
        (4, f"conflicting duplicate of {name}:5"),
        (5, f"conflicting duplicate of {name}:4"),
    ]
    assert result.records.get_column("item_id").to_list() == ["c"]
    assert result.summary["quarantine_reasons"] == {"conflicting duplicate": 5}


def test_key_includes_predictor_and_sample(tmp_path: Path) -> None:
    rows = [
        {**BASE, "item_id": "a"},
        {**BASE, "item_id": "a", "predictor": "m2", "outcome": "no"},
        {**BASE, "item_id": "a", "sample": 1, "outcome": "no"},
    ]
    result = ingest([_jsonl(tmp_path / "r.jsonl", rows)])
    assert result.summary["records_used"] == 3 and result.quarantine.height == 0


def test_duplicates_across_formats(tmp_path: Path) -> None:
    _jsonl(tmp_path / "a.jsonl", [{**BASE, "item_id": "a", "confidence": 0.5}])
    (tmp_path / "b.csv").write_text(
        "model,task,item_id,prediction,outcome,confidence\nm1,refusal,a,YES,true,0.50\n"
    )
    result = ingest([tmp_path])
    assert result.summary["records_duplicate"] == 1
    assert result.records.get_column("source_file").to_list() == [(tmp_path / "a.jsonl").as_posix()]


# --------------------------------------------------------------------------- determinism, hash


def _mixed_rows() -> list[dict[str, Any]]:
    rows = []
    for model in ("m2", "m1"):
        for i in range(6):
            rows.append(
                {
                    "model": model,
                    "task": "t" if i % 2 else "s",
                    "item_id": f"i{5 - i}",
                    "prediction": "yes",
                    "outcome": "yes" if i % 3 else "no",
                    "sample": i % 2,
                    "confidence": i / 10,
                }
            )
    return rows


def test_records_do_not_depend_on_file_or_row_order(tmp_path: Path) -> None:
    rows = _mixed_rows()
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    _jsonl(one / "a.jsonl", rows[:7])
    _jsonl(one / "b.jsonl", rows[7:] + rows[:2])  # two exact duplicates across files
    _jsonl(two / "a.jsonl", list(reversed(rows[:7])))
    _jsonl(two / "b.jsonl", list(reversed(rows[7:] + rows[:2])))
    first = ingest([one / "a.jsonl", one / "b.jsonl"]).records
    second = ingest([one / "b.jsonl", one / "a.jsonl"]).records
    assert first.equals(second)
    reordered = ingest([two / "b.jsonl", two / "a.jsonl"]).records
    ignore = ["source_file", "source_line"]
    assert first.drop(ignore).equals(reordered.drop(ignore))
    key = ["model", "predictor", "task", "item_id", "sample"]
    assert first.equals(first.sort([*key, "source_file", "source_line"]))


def test_sha256_definition_and_stability(tmp_path: Path) -> None:
    import hashlib

    data = tmp_path / "data"
    data.mkdir()
    a = _jsonl(data / "a.jsonl", _rows(2))
    b = _jsonl(data / "b.jsonl", _rows(1, task="other"))
    digest = hashlib.sha256()
    for path in (a, b):
        raw = path.read_bytes()
        digest.update(path.name.encode() + b"\0" + len(raw).to_bytes(8, "big") + raw)
    first = ingest([data]).summary
    assert first["sha256"] == digest.hexdigest()
    assert first["files"][0]["sha256"] == hashlib.sha256(a.read_bytes()).hexdigest()
    moved = shutil.copytree(data, tmp_path / "elsewhere")
    assert ingest([moved]).summary["sha256"] == first["sha256"]
    assert ingest([b, a]).summary["sha256"] == first["sha256"]
    _jsonl(moved / "b.jsonl", _rows(1, task="changed"))
    assert ingest([moved]).summary["sha256"] != first["sha256"]


# --------------------------------------------------------------------------- summary, output


def test_summary_keys_and_registry_report(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "r.jsonl", _rows(2) + [{**BASE, "model": "m9", "item_id": "z"}])
    reg = tmp_path / "reg.csv"
    reg.write_text("model,params_b\nm1,8\nm5,\n")
    s = ingest([path], registry=reg).summary
    for key in (
        "records_read",
        "records_used",
        "records_quarantined",
        "records_duplicate",
        "files",
        "sha256",
        "models",
        "tasks",
        "quarantine_reasons",
        "unreadable_predictions",
        "mapping",
        "ignored_columns",
        "registry_report",
    ):
        assert key in s, key
    assert s["models"] == ["m1", "m9"] and s["tasks"] == ["refusal"]
    assert s["registry_report"] == {
        "models_not_in_registry": ["m9"],
        "models_without_size": ["m5"],
        "registry_models_without_records": ["m5"],
    }
    assert "registry_report" not in ingest([path]).summary


def test_bad_registry_fails_ingest(tmp_path: Path) -> None:
    reg = tmp_path / "reg.csv"
    reg.write_text("model,params_b\nm1,-8\n")
    message = _input_error([_jsonl(tmp_path / "r.jsonl", _rows(1))], registry=reg)
    assert "reg.csv: line 2, column 'params_b'" in message


def test_no_usable_records_is_input_error(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "r.jsonl", [{**BASE, "item_id": "a", "confidence": 3}, "[1]"])
    message = _input_error([path])
    assert "no records to analyse (2 read, 2 quarantined" in message
    assert "invalid confidence 1" in message and "not a JSON object 1" in message


def test_path_errors(tmp_path: Path) -> None:
    assert "no such file or folder" in _input_error([tmp_path / "missing.jsonl"])
    (tmp_path / "x.json").write_text("{}")
    assert "unsupported file type '.json'" in _input_error([tmp_path / "x.json"])
    (tmp_path / "empty").mkdir()
    assert "holds no .jsonl" in _input_error([tmp_path / "empty"])
    assert "no input paths given" in _input_error([])


def test_write_ingest(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "r.jsonl", _rows(2) + ['{"broken'])
    result = ingest([path])
    out = tmp_path / "out" / "nested"
    write_ingest(result, out)
    assert sorted(p.name for p in out.iterdir()) == [
        "ingest.json",
        "quarantine.parquet",
        "records.parquet",
    ]
    assert pl.read_parquet(out / "records.parquet").equals(result.records)
    assert pl.read_parquet(out / "quarantine.parquet").equals(result.quarantine)
    assert json.loads((out / "ingest.json").read_text()) == json.loads(json.dumps(result.summary))


# --------------------------------------------------------------------------- options


def test_parse_map_options() -> None:
    assert parse_map_options([]) == {}
    assert parse_map_options(["item_id=question_id", " model = target "]) == {
        "item_id": "question_id",
        "model": "target",
    }


@pytest.mark.parametrize(
    ("items", "fragment"),
    [
        (["item_id"], "expected CANONICAL=SOURCE"),
        (["=x"], "expected CANONICAL=SOURCE"),
        (["item_id="], "expected CANONICAL=SOURCE"),
        (["itemid=question_id"], "Did you mean 'item_id'?"),
        (["source_file=x"], "unknown canonical column 'source_file'"),
        (["model=a", "model=b"], "already mapped to 'a'"),
    ],
)
def test_parse_map_options_errors(items: list[str], fragment: str) -> None:
    with pytest.raises(InputError) as info:
        parse_map_options(items)
    assert fragment in str(info.value) and "\n" not in str(info.value)
    assert str(info.value).startswith("--map '")


def test_load_config_ok(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        'tasks = ["a", "b"]\n[map]\nitem_id = "qid"\n[defaults]\nsample = 1\ncorrect = true\n'
    )
    loaded = load_config(cfg)
    assert loaded == IngestConfig(
        mapping={"item_id": "qid"},
        tasks=("a", "b"),
        defaults={"sample": "1", "correct": "true"},
        path=str(cfg),
    )


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            '[mapp]\nitem_id = "q"\n',
            "line 1, column 'mapp': unknown config key. Did you mean 'map'?",
        ),
        ('task = ["a"]\n', "line 1, column 'task': unknown config key. Did you mean 'tasks'?"),
        ('[map]\nitemid = "q"\n', "line 2, column 'itemid'"),
        ("[map]\nitem_id = 3\n", "line 2, column 'item_id': the source column must be"),
        ('tasks = "refusal"\n', "line 1, column 'tasks': 'tasks' must be a non-empty list"),
        ("tasks = []\n", "'tasks' must be a non-empty list"),
        ('[defaults]\ntsk = "a"\n', "Did you mean 'task'?"),
        ('[defaults]\ntask = ["a"]\n', "a default must be a string"),
        ("map = 3\n", "'map' must be a table"),
        ("[map\n", "invalid TOML"),
        # a records mapping given as --config: where it goes instead (issue 29)
        ('# a study\nformat = "records"\n[map]\nmodel = "m"\n',
         "line 2, column 'format': this is a mapping (format = 'records'), not an ingest config. "
         "Pass it with --mapping (selfmodel ingest, selfmodel run). selfmodel reduce applies no "
         "mapping"),
        ('format = "inspect"\n', "Import the logs with selfmodel import inspect LOGS --mapping"),
    ],
)
def test_load_config_errors(tmp_path: Path, text: str, fragment: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    with pytest.raises(InputError) as info:
        load_config(cfg)
    message = str(info.value)
    assert message.startswith(str(cfg)) and "\n" not in message
    assert fragment in message


def test_load_config_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the config"):
        load_config(tmp_path / "nope.toml")


def test_jsonl_keys_first_seen_late_are_read(tmp_path: Path) -> None:
    rows: list[dict[str, Any] | str] = [*_rows(1100)]
    rows[1050] = {**BASE, "item_id": "late", "cluster": "c9", "confidence": 0.5}
    result = ingest([_jsonl(tmp_path / "r.jsonl", rows)])
    rec = result.records.filter(pl.col("item_id") == "late").row(0, named=True)
    assert (rec["cluster"], rec["confidence"]) == ("c9", 0.5)


def test_jsonl_required_key_only_nested_is_a_missing_column(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "r.jsonl", [{**BASE, "meta": {"item_id": "a"}, "qid": "a"}])
    message = _input_error([path])
    assert "column 'item_id': required column 'item_id' is missing" in message
    assert "--map item_id=qid" in message


def test_declared_failure_without_outcome_is_kept_as_unreadable(tmp_path):
    """A failed run (status error, no prediction, no outcome) counts as wrong in strict accuracy."""
    from selfmodel.records.cells import to_cells

    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"model": "m", "task": "t", "item_id": "1", "prediction": "yes", "outcome": "yes"}\n'
        '{"model": "m", "task": "t", "item_id": "2", "status": "error"}\n'
        '{"model": "m", "task": "t", "item_id": "3", "prediction": "yes"}\n'
    )
    res = ingest([log])
    assert res.summary["records_used"] == 2 and res.summary["records_quarantined"] == 1
    assert "no outcome" in res.quarantine["reason"][0]
    cell = to_cells(res.records).row(0, named=True)
    assert (cell["n_total"], cell["n"], cell["k_strict"], cell["n_unreadable"]) == (2, 1, 1, 1)


def test_the_manifest_of_a_simulated_folder_is_named_not_hidden(tmp_path: Path) -> None:
    """``simulate --out`` leaves selfmodel's manifest beside the records: said as such."""
    from selfmodel.records.ingest.discover import MANIFEST_FILE, walk_folder

    data = tmp_path / "data"
    data.mkdir()
    _jsonl(data / "a.jsonl", [BASE])
    (data / ".selfmodel-out").write_text("{}")
    (data / ".other").write_text("x")
    files, skipped = walk_folder(data)
    assert [f.name for f in files] == ["a.jsonl"]
    assert skipped == [{"path": ".other", "reason": "hidden"},
                       {"path": ".selfmodel-out", "reason": MANIFEST_FILE}]
