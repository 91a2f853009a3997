"""The SQL engines (DuckDB, Spark) reduce logs to the same cells and accounting as ingest.

Every comparison is against the polars path run on the same files:
``selfmodel.records.cells.to_cells(selfmodel.records.ingest.ingest(files).records)`` and ingest's summary,
compared exactly (``assert_frame_equal``: values, dtypes, column order, row order).

DuckDB is a dependency of selfmodel; Spark is optional (``pip install 'selfmodel[engines]'``).
A test skips, naming the missing package, only when it is not installed; with
``SELFMODEL_REQUIRE_ENGINES=1`` (set by CI) a missing engine is a failure instead.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import sys
import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from selfmodel.records.cells import CONDITION_CELL_KEY, build_cells, to_cells
from selfmodel.records.contract import InputError
from selfmodel.records.engines import reduce_records
from selfmodel.records.ingest import ingest, parse_map_options

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "bad_inputs"
CASES = tomllib.loads((CORPUS / "cases.toml").read_text())["case"]
SUMMARY_KEYS = (
    "records_read", "records_used", "records_quarantined", "records_duplicate",
    "quarantine_reasons", "statuses", "unreadable_predictions", "models", "tasks",
    "ignored_columns", "mapping", "defaults", "allowed_tasks", "predictions_not_boolean",
)


def _need(module: str, what: str) -> None:
    if importlib.util.find_spec(module) is not None:
        return
    msg = f"{what} is not installed (pip install 'selfmodel[engines]')"
    if os.environ.get("SELFMODEL_REQUIRE_ENGINES"):
        pytest.fail(msg + "; SELFMODEL_REQUIRE_ENGINES is set, so this is a failure")
    pytest.skip(msg)


@pytest.fixture(scope="module")
def spark():
    _need("pyspark", "pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        msg = "Java (17+) is not on PATH and JAVA_HOME is unset: Spark cannot start"
        if os.environ.get("SELFMODEL_REQUIRE_ENGINES"):
            pytest.fail(msg)
        pytest.skip(msg)
    from selfmodel.records.engines.spark_engine import spark_session

    # one shuffle partition: the test files are tiny, and each of the reduction's GROUP BYs
    # is a shuffle (with 4, the bad-input corpus took 229 s instead of 176 s here)
    session = spark_session("local[2]", {"spark.sql.shuffle.partitions": "1"})
    yield session
    session.stop()


@pytest.fixture(params=["duckdb", pytest.param("spark", marks=pytest.mark.ci)])
def engine(request):
    """``(name, engine_options)`` for each engine, sharing one Spark session per module.

    The Spark cases start a JVM (minutes of CPU): they are in the ``ci`` layer, DuckDB's in
    the fast one.
    """
    if request.param == "duckdb":
        _need("duckdb", "duckdb")
        return "duckdb", {}
    return "spark", {"session": request.getfixturevalue("spark")}


def _reference(files, keys=("model", "task"), **kw):
    res = ingest(files, **kw)
    return to_cells(res.records, keys=keys), res.summary


def _assert_same(files, engine, keys=("model", "task"), **kw):
    name, options = engine
    cells, summary = _reference(files, keys, **kw)
    got = reduce_records(files, engine=name, engine_options=options, keys=keys, **kw)
    assert_frame_equal(got.cells, cells)
    for key in SUMMARY_KEYS:
        assert got.summary[key] == summary[key], key
    assert [(f["path"], f["format"], f["rows"]) for f in got.summary["files"]] == [
        (f["path"], f["format"], f["rows"]) for f in summary["files"]
    ]
    s = got.summary
    assert s["records_read"] == s["records_used"] + s["records_quarantined"] + s["records_duplicate"]
    return got


def _case_kwargs(case):
    kw = {}
    if case.get("map"):
        kw["mapping"] = parse_map_options(case["map"])
    if case.get("config"):
        kw["config"] = CORPUS / case["config"]
    return kw


OK_CASES = [c for c in CASES if c["expect"] == "quarantine" or "registry" in c]
ERROR_CASES = [c for c in CASES if c["expect"] == "exit2" and "registry" not in c]


@pytest.mark.parametrize("case", OK_CASES, ids=[c["name"] for c in OK_CASES])
def test_bad_input_corpus_same_accounting(case, engine):
    files = [CORPUS / f for f in case["files"]]
    got = _assert_same(files, engine, **_case_kwargs(case))
    if case["expect"] == "quarantine":  # the corpus's own expected counts, as a cross-check
        for key, field in (("read", "records_read"), ("used", "records_used"),
                           ("quarantined", "records_quarantined"),
                           ("duplicate", "records_duplicate")):
            assert got.summary[field] == case[key]


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c["name"] for c in ERROR_CASES])
def test_bad_input_corpus_same_error(case, engine):
    files = [CORPUS / f for f in case["files"]]
    kw = _case_kwargs(case)
    with pytest.raises(InputError) as ref:
        ingest(files, **kw)
    name, options = engine
    with pytest.raises(InputError) as got:
        reduce_records(files, engine=name, engine_options=options, **kw)
    assert case["message"] in str(got.value)
    assert str(got.value) == str(ref.value)


# ----------------------------------------------------------------------------- messy logs

_WS = ["", " ", "\t", "\u00a0", " \u3000"]
_BOOLS = ["true", "false", "TRUE", "False", "yes", "No", "Y", "n", "1", "0", "t", "F",
          "1.0", "0.0"]
_MISSING = ["NaN", "nan", "None", "NULL", "null", "nOnE"]
_TEXT = ["lion", "Lion", "mane", "<b>x</b>", "=1+1", "a,b", 'say "hi"', "中文", "x\ny"]


def _messy(rng: np.random.Generator, n: int, *, models: int = 4) -> list[dict]:
    """Rows mixing every rule ingest applies, valid and not, duplicates and conflicts."""

    def pad(v: str) -> str:
        return str(rng.choice(_WS)) + v + str(rng.choice(_WS))

    def pick(values):
        return values[int(rng.integers(len(values)))]

    rows: list[dict] = []
    for _ in range(n):
        task = pick(["refusal", "difficulty", "words"])
        binary = task != "words" or rng.random() < 0.5
        pred = pick(_BOOLS) if binary else pick(_TEXT)
        out = pick(_BOOLS) if binary else pick(_TEXT)
        row = {
            "model": pad(f"m{int(rng.integers(models))}"),
            "task": pad(task),
            "item_id": pad(f"i{int(rng.integers(n // 3 + 1))}"),
            "prediction": pad(pred) if rng.random() > 0.08 else pick([None, "", "  ", *_MISSING]),
            "outcome": pad(out) if rng.random() > 0.03 else None,
            "confidence": pick([None, "0.5", "0.25", ".75", "1", "0", "1e-1", "1.7", "-0.2",
                                "nan", "NaN", "inf", "high", " 0.9 ", "None"]),
            "sample": pick([None, "0", "1", "2", "1.0", "+1", "1.5", "-1", "x", "1e0", "NaN"]),
            "status": pick([None, "ok", "OK", " Refused ", "unparsed", "error", "bogus", ""]),
            "predictor": pick([None, None, None, "m0", "other"]),
            "cluster": pick([None, "c1", "c2"]),
            "run_id": pick([None, "r1", "r2", " r1 ", "None"]),
        }
        if rng.random() < 0.15:
            row["correct"] = pick(_BOOLS + ["maybe", ""])
        if rng.random() < 0.02:
            row["model"] = pick([None, "", " ", "None", "NaN"])
        if binary and rng.random() < 0.03:  # not a boolean in a task of boolean outcomes
            row["prediction"] = pick(["maybe", "unsure"])
        rows.append(row)
    # exact copies and conflicting copies of earlier rows
    for _ in range(n // 10):
        src = dict(rows[int(rng.integers(len(rows)))])
        if rng.random() < 0.4:
            src["confidence"] = "0.123"
        src["cluster"] = "copy"  # not a compared column: still an exact duplicate
        rows.append(src)
    return rows


def _write_messy(tmp: Path, seed: int, *, conditions: bool = False) -> list[Path]:
    rng = np.random.default_rng(seed)
    rows = _messy(rng, 1500)
    cols = ["model", "task", "item_id", "prediction", "outcome", "correct", "confidence",
            "sample", "status", "predictor", "cluster", "run_id"]
    if conditions:  # a condition column, spelled as logs spell it (missing, padded, a list)
        cols.append("condition")
        for row in rows:
            row["condition"] = str(rng.choice(
                ["before", "after", " after ", "", "None", "before", "after"]
                + ["[1, 2]"] * (rng.random() < 0.01)))
    frame = pl.DataFrame([{c: r.get(c) for c in cols} for r in rows],
                         schema={c: pl.Utf8 for c in cols}, orient="row")
    third = frame.height // 3
    a, b, c = frame[:third], frame[third:2 * third], frame[2 * third:]
    (tmp / "a.jsonl").write_text(
        "".join(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n"
                for r in a.iter_rows(named=True))
        + "\n   \n{broken\n[1, 2]\n"
    )
    b.write_csv(tmp / "b.csv")
    with (tmp / "b.csv").open("a") as fh:
        extra = "," * (len(cols) - 12)  # one field more than the header, an empty row
        fh.write(f"m1,refusal,i1,true,true,,,,,,,{extra},extra\n{extra},,,,,,,,,,,\n")
    # Parquet with typed columns: booleans, doubles and integers as stored
    typed = c.with_columns(
        pl.col("confidence").cast(pl.Float64, strict=False),
        pl.col("sample").cast(pl.Int64, strict=False),
        pl.col("correct").str.strip_chars().str.to_lowercase()
        .replace_strict({"true": True, "false": False}, default=None, return_dtype=pl.Boolean),
    )
    typed.write_parquet(tmp / "c.parquet")
    return [tmp / "a.jsonl", tmp / "b.csv", tmp / "c.parquet"]


@pytest.mark.parametrize("seed", [1, 2])
def test_messy_logs_same_cells_and_accounting(tmp_path, engine, seed):
    files = _write_messy(tmp_path, seed)
    got = _assert_same(files, engine)
    s = got.summary
    # the data really exercise the rules: several reasons, duplicates, unreadable rows
    assert len(s["quarantine_reasons"]) >= 6, s["quarantine_reasons"]
    assert s["quarantine_reasons"].get("conflicting duplicate", 0) > 0
    assert s["records_duplicate"] > 0 and s["unreadable_predictions"] > 0
    assert got.cells["binary"].n_unique() == 2
    assert set(s["predictions_not_boolean"]) == {"refusal", "difficulty"}


def test_messy_logs_with_conditions_same_cells_per_condition(tmp_path, engine):
    """A condition column: the same accounting, and equal cells pooled and per condition."""
    files = _write_messy(tmp_path, 6, conditions=True)
    got = _assert_same(files, engine)
    per_condition = _assert_same(files, engine, keys=CONDITION_CELL_KEY)
    assert got.summary["quarantine_reasons"]["invalid identifier"] > 0
    assert set(per_condition.cells["condition"].to_list()) == {None, "after", "before"}
    assert per_condition.cells["n_total"].sum() == got.cells["n_total"].sum()


def test_messy_logs_with_config(tmp_path, engine):
    files = _write_messy(tmp_path, 3)
    cfg = tmp_path / "ingest.toml"
    cfg.write_text('tasks = ["refusal", "words"]\n[defaults]\nrun_id = "r1"\n')
    got = _assert_same(files, engine, config=cfg)
    assert got.summary["quarantine_reasons"]["unknown task"] > 0


def test_file_of_broken_lines_beside_good_files(tmp_path, engine):
    """A JSONL file with no JSON object has no columns to check: its lines are quarantined."""
    (tmp_path / "broken.jsonl").write_text("{oops\n[1]\n")
    shutil.copy(CORPUS / "valid.jsonl", tmp_path / "valid.jsonl")
    got = _assert_same([tmp_path / "broken.jsonl", tmp_path / "valid.jsonl"], engine)
    assert got.summary["quarantine_reasons"] == {"invalid JSON": 1, "not a JSON object": 1}


def test_cell_without_readable_record_has_nan_mode_share(tmp_path, engine):
    p = tmp_path / "r.csv"
    p.write_text("model,task,item_id,prediction,outcome,status\n"
                 "m,t,1,,true,refused\nm,t,2,,false,error\nm,u,1,yes,true,\n")
    got = _assert_same([p], engine)
    row = got.cells.filter(pl.col("task") == "t").row(0, named=True)
    assert row["n"] == 0 and row["n_unreadable"] == 2 and math.isnan(row["mode_outcome_share"])


# ----------------------------------------------------------------------------- issue 14 rules

_HEAD = "model,task,item_id,prediction,outcome,run_id\n"


def test_runs_are_separate_samples(tmp_path, engine):
    """run_id is part of the key: runs never collapse; a conflict within one run keeps neither."""
    (tmp_path / "a.csv").write_text(_HEAD + "m,t,1,yes,true,r1\nm,t,2,no,true,r1\n"
                                    "m,t,3,yes,true,\n")
    (tmp_path / "b.jsonl").write_text(
        '{"model": "m", "task": "t", "item_id": "1", "prediction": "no", "outcome": true, '
        '"run_id": "r2"}\n'  # another run, another answer: a second sample
        '{"model": "m", "task": "t", "item_id": "2", "prediction": "no", "outcome": true, '
        '"run_id": " r1 "}\n'  # the same run, the same answer: an exact duplicate
        '{"model": "m", "task": "t", "item_id": "3", "prediction": "no", "outcome": true}\n'
        '{"model": "m", "task": "t", "item_id": "4", "prediction": "no", "outcome": true, '
        '"run_id": "r3"}\n{"model": "m", "task": "t", "item_id": "4", "prediction": "yes", '
        '"outcome": true, "run_id": "r3"}\n')  # two answers within one run: a conflict
    got = _assert_same([tmp_path / "a.csv", tmp_path / "b.jsonl"], engine)
    s = got.summary
    assert (s["records_used"], s["records_duplicate"]) == (3, 1)
    assert s["quarantine_reasons"] == {"conflicting duplicate": 4}
    assert got.cells.row(0, named=True)["n"] == 3


def test_conditions_are_separate_records(tmp_path, engine):
    """condition is part of the key: one item under two conditions is two records, the same
    answer twice under one condition is a duplicate, two answers under one a conflict."""
    (tmp_path / "a.csv").write_text(
        "model,task,item_id,prediction,outcome,condition\n"
        "m,t,1,yes,true,before\nm,t,1,no,true,after\n"  # two conditions: two records
        "m,t,2,yes,true, before \nm,t,2,yes,true,before\n"  # the same record twice
        "m,t,3,yes,true,after\nm,t,3,no,true,after\n"  # two answers under one: a conflict
        "m,t,4,yes,false,\nm,t,4,yes,false,None\n"  # no condition (null): a duplicate
        "m,t,5,yes,true,[1]\n")  # a list is not an identifier
    (tmp_path / "b.jsonl").write_text(
        '{"model": "m", "task": "t", "item_id": "2", "prediction": "no", "outcome": true, '
        '"condition": "after"}\n'
        '{"model": "m", "task": "t", "item_id": "6", "prediction": "no", "outcome": true, '
        '"condition": ["a", "b"]}\n')
    files = [tmp_path / "a.csv", tmp_path / "b.jsonl"]
    got = _assert_same(files, engine)
    s = got.summary
    assert (s["records_used"], s["records_duplicate"]) == (5, 2)
    assert s["quarantine_reasons"] == {"conflicting duplicate": 2, "invalid identifier": 2}
    split = _assert_same(files, engine, keys=CONDITION_CELL_KEY)
    assert split.cells.select("condition", "n", "k").rows() == [
        (None, 1, 0), ("after", 2, 0), ("before", 2, 2)]


def test_value_spellings(tmp_path, engine):
    """1.0/0.0 are booleans; null/NaN/nan/None in any case are missing in a text column;
    null/None are missing in a numeric one, where NaN is no number (quarantined)."""
    p = tmp_path / "v.csv"
    p.write_text("model,task,item_id,prediction,outcome,confidence,sample,status,predictor\n"
                 "m,t,1,1.0,TRUE,None,null,,None\n"
                 "m,t,2, 0.0 ,false,none,NULL,NaN,\n"
                 "m,t,3,NaN,true,0.5,,,\n"
                 "m,t,4, nULL ,false,,,,\n"
                 "None,t,5,yes,true,,,,\n"
                 "m,nan,6,yes,true,,,,\n"
                 "m,u,1,lion,NaN,,,,\n"
                 "m,t,7,yes,true,NaN,,,\n"
                 "m,t,8,yes,true,, nan ,,\n")
    got = _assert_same([p], engine)
    s = got.summary
    assert s["quarantine_reasons"] == {"missing value": 2, "no outcome": 1,
                                       "invalid confidence": 1, "invalid sample": 1}
    assert s["statuses"] == {"ok": 2, "unparsed": 2}
    row = got.cells.row(0, named=True)
    assert (row["n"], row["k"], row["hits"]) == (2, 2, 1)


def test_typed_nan_confidence_and_sample_are_quarantined(tmp_path, engine):
    """A NaN or infinite double confidence or sample is no number: quarantined, not missing;
    a NaN prediction is a missing one (unreadable)."""
    p = tmp_path / "t.parquet"
    nan, inf = float("nan"), float("inf")
    pl.DataFrame({
        "model": ["m"] * 6, "task": ["t"] * 6, "item_id": ["1", "2", "3", "1", "5", "6"],
        "prediction": [1.0, 0.0, nan, 1.0, 1.0, 1.0], "outcome": ["true"] * 6,
        "confidence": [nan, 0.5, 0.5, None, 0.5, -inf], "sample": [0.0, 1.0, 0.0, 0.0, nan, 0.0],
    }).write_parquet(p)
    got = _assert_same([p], engine)
    s = got.summary
    assert s["quarantine_reasons"] == {"invalid confidence": 2, "invalid sample": 1}
    assert (s["records_used"], s["records_duplicate"]) == (3, 0)
    assert s["statuses"] == {"ok": 2, "unparsed": 1}


def test_json_nan_and_infinity_literals(tmp_path, engine):
    """A JSON NaN is missing in a text column (prediction) and no number in a numeric one
    (confidence, sample: quarantined, as Infinity is)."""
    p = tmp_path / "n.jsonl"
    head = '{"model": "m", "task": "t", "outcome": "true", '
    p.write_text(head + '"item_id": "1", "prediction": "yes", "confidence": NaN}\n'
                 + head + '"item_id": "2", "prediction": "yes", "confidence": Infinity}\n'
                 + head + '"item_id": "3", "prediction": "yes", "sample": NaN}\n'
                 + head + '"item_id": "4", "prediction": "no", "confidence": -Infinity}\n'
                 + head + '"item_id": "5", "prediction": NaN}\n'
                 + head + '"item_id": "6", "prediction": "no", "confidence": 0.5}\n')
    got = _assert_same([p], engine)
    assert got.summary["quarantine_reasons"] == {"invalid confidence": 3, "invalid sample": 1}
    assert got.summary["statuses"] == {"ok": 1, "unparsed": 1}


def test_identifiers_values_and_numbers_issue50(tmp_path, engine):
    """Every engine quarantines what ingest does (issue 50): an identifier holding a control
    character (a NUL, a C1 control) or no visible character (a zero-width space, a word
    joiner), a list or object in a value column, NaN and infinity in confidence and sample;
    a tab inside a name and NaN in a prediction are kept."""
    head = "model,task,item_id,prediction,outcome,confidence,sample,cluster,run_id\n"
    (tmp_path / "a.csv").write_text(
        head + "m,t,1,yes,true,,,,\nm,t,2,yes,true,NaN,,,\nm,t,3,yes,true,,inf,,\n"
        "m,t,4,yes,true,,,\u2060,\nm,t,5,\"[\"\"yes\"\"]\",true,,,,\nm,t,6,NaN,true,,,,\n"
        "m,t,7,yes,true,,,a\tb,\nm,t,8,yes,true,,, ,r\u0085x\n", encoding="utf-8")
    rows = [{"model": "m\u0000", "task": "t", "item_id": "9", "outcome": True},
            {"model": "m", "task": "\u200b", "item_id": "10", "outcome": True},
            {"model": "m", "task": "t", "item_id": "11", "outcome": {"v": 1}},
            {"model": "m", "task": "t", "item_id": "12", "outcome": True, "run_id": "r\u009b"},
            {"model": "m", "task": "t", "item_id": "13", "outcome": True, "prediction": "yes"}]
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) +
                                      '{"model": "m", "task": "t", "item_id": "14", '
                                      '"outcome": true, "confidence": -Infinity}\n')
    got = _assert_same([tmp_path / "a.csv", tmp_path / "b.jsonl"], engine)
    assert got.summary["quarantine_reasons"] == {
        "invalid confidence": 2, "invalid identifier": 4, "invalid sample": 1,
        "invalid value": 2}


def test_row_with_only_correct_keeps_it(tmp_path, engine):
    p = tmp_path / "c.csv"
    p.write_text("model,task,item_id,prediction,outcome,correct\n"
                 "m,t,1,,,true\nm,t,2,,,no\nm,t,3,,true,1.0\nm,t,4,,,\nm,t,5,yes,,0\n")
    got = _assert_same([p], engine)
    row = got.cells.row(0, named=True)
    assert (row["n"], row["k"], row["n_unreadable"]) == (4, 2, 0)
    assert got.summary["quarantine_reasons"] == {"no outcome": 1}


def test_non_boolean_prediction_in_a_binary_task_is_unparsed(tmp_path, engine):
    """Counted per task; a task with a text outcome, or a conflicting copy, does not count."""
    p = tmp_path / "b.csv"
    p.write_text("model,task,item_id,prediction,outcome,predictor,status\n"
                 "m,b,1,maybe,true,,\nm,b,2,yes,false,,\nm,b,3,Unsure,,,refused\n"
                 "m,b,4,perhaps,false,other,\n"  # another predictor's record counts too
                 "m,w,1,maybe,true,,\nm,w,2,lion,lion,,\n"  # w has a text outcome
                 "m,c,1,maybe,true,,\nm,c,1,maybe,dog,,\nm,c,2,x,false,,\n")  # c: 1 conflict
    got = _assert_same([p], engine)
    s = got.summary
    assert s["predictions_not_boolean"] == {"b": 2, "c": 1}
    assert s["statuses"] == {"ok": 3, "refused": 1, "unparsed": 3}
    b = got.cells.filter(pl.col("task") == "b").row(0, named=True)
    assert (b["n"], b["n_unreadable"], b["binary"]) == (1, 2, True)


def test_uint64_sample_beyond_int64_is_invalid(tmp_path, engine):
    p = tmp_path / "u.parquet"
    pl.DataFrame({
        "model": ["m", "m", "m"], "task": ["t"] * 3, "item_id": ["1", "2", "3"],
        "prediction": ["yes"] * 3, "outcome": ["true"] * 3,
        "sample": pl.Series([2**64 - 1, 2**63, 3], dtype=pl.UInt64),
    }).write_parquet(p)
    got = _assert_same([p], engine)
    assert got.summary["quarantine_reasons"] == {"invalid sample": 2}


def test_gzip_logs_are_read(tmp_path, engine):
    """.jsonl.gz and .csv.gz are read like their plain files; a corrupt one is ingest's error."""
    import gzip

    files = _write_messy(tmp_path, 5)
    zipped = []
    for f in files[:2]:
        z = f.with_name(f.name + ".gz")
        z.write_bytes(gzip.compress(f.read_bytes()))
        f.unlink()
        zipped.append(z)
    got = _assert_same([tmp_path], engine)
    assert [f["path"] for f in got.summary["files"]] == [z.as_posix() for z in zipped] + [
        files[2].as_posix()]
    assert got.summary["records_read"] > 1000
    bad = tmp_path / "bad.csv.gz"
    bad.write_bytes(gzip.compress(b"model,task\n")[:-6])
    with pytest.raises(InputError) as ref:
        ingest([bad])
    name, options = engine
    with pytest.raises(InputError) as err:
        reduce_records([bad], engine=name, engine_options=options)
    assert str(err.value) == str(ref.value) and "gzip" in str(err.value)


def test_folder_walk_follows_links(tmp_path, engine):
    """A linked subfolder is read (each real folder once), as ingest reads it."""
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    shutil.copy(CORPUS / "valid.jsonl", data / "sub" / "v.jsonl")
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(CORPUS / "valid.csv", outside / "w.csv")
    (data / "linked").symlink_to(outside, target_is_directory=True)
    (data / "loop").symlink_to(data, target_is_directory=True)
    (data / "dangling.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    got = _assert_same([data], engine)
    assert [f["path"] for f in got.summary["files"]] == [
        (data / "linked" / "w.csv").as_posix(), (data / "sub" / "v.jsonl").as_posix()]


def test_reduction_on_a_table_of_records(tmp_path, engine):
    """The cluster recipe of docs/engines.md: the reduction over a table of canonical records."""
    from selfmodel.records.ingest import write_ingest
    from selfmodel.records.reduction import cells_of, raw_records

    res = ingest(_write_messy(tmp_path, 4))
    write_ingest(res, tmp_path / "out")
    path = (tmp_path / "out" / "records.parquet").as_posix()
    name, options = engine
    if name == "duckdb":
        import duckdb

        table = duckdb.connect().read_parquet(path)
    else:
        table = options["session"].read.parquet(path)
    assert_frame_equal(cells_of(raw_records(table)), to_cells(res.records))


# ----------------------------------------------------------------------------- CLI and data


def test_reduce_command_writes_the_pipelines_cells(tmp_path):
    _need("duckdb", "duckdb")
    from selfmodel.cli import main
    from selfmodel.pipeline.stages import resolve_inputs
    from selfmodel.records.registry import load_registry

    out = tmp_path / "out"
    assert main(["reduce", str(ROOT / "data_raw"), "--out", str(out)]) == 0
    inputs = resolve_inputs([ROOT / "data_raw"], None)
    expected = build_cells(ingest(inputs.record_paths).records, load_registry(inputs.registry))
    assert_frame_equal(pl.read_parquet(out / "cells.parquet"), expected)
    summary = json.loads((out / "reduce.json").read_text())
    assert summary["engine"] == "duckdb" and summary["records_used"] == summary["records_read"]
    assert summary["files_not_read"] == inputs.not_read


def test_reduce_command_lists_files_not_read(tmp_path):
    """reduce.json lists every entry of an input folder it did not read, as ingest.json does."""
    _need("duckdb", "duckdb")
    from selfmodel.cli import main

    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(CORPUS / "valid.csv", data / "v.csv")
    (data / "notes.txt").write_text("x")
    (data / ".hidden.jsonl").write_text("{}")
    (data / "gone.csv").symlink_to(tmp_path / "nowhere.csv")
    assert main(["reduce", str(data), "--out", str(tmp_path / "o")]) == 0
    assert main(["ingest", str(data), "--out", str(tmp_path / "i")]) == 0
    got = json.loads((tmp_path / "o" / "reduce.json").read_text())["files_not_read"]
    assert got == json.loads((tmp_path / "i" / "ingest.json").read_text())["files_not_read"]
    assert {f["reason"] for f in got} == {"hidden", "dangling link", "unsupported type '.txt'"}


def test_reduce_command_bad_input_is_one_line_exit_2(tmp_path, capsys):
    _need("duckdb", "duckdb")
    from selfmodel.cli import main

    code = main(["reduce", str(CORPUS / "no_item_id.csv"), "--out", str(tmp_path / "o")])
    errors = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
    assert code == 2 and len(errors) == 1 and "--map item_id=question_id" in errors[0]
    assert not (tmp_path / "o").exists()


# ----------------------------------------------------------------------------- a large log


def _large_log(tmp: Path, n: int) -> list[Path]:
    """``n`` generated records (bench/gen_records.py) plus a file of bad and duplicate rows."""
    if str(ROOT) not in sys.path:  # `pytest` run as a script does not put the root there
        sys.path.insert(0, str(ROOT))
    from bench.gen_records import records

    big = records(n)
    big.write_parquet(tmp / "big.parquet")
    rng = np.random.default_rng(7)
    take = rng.choice(big.height, 3000, replace=False)
    copies = big[take[:2000]]  # exact duplicates across files
    conflicts = big[take[2000:]].with_columns(  # conflicting duplicates
        pl.when(pl.col("outcome") == "true").then(pl.lit("false")).otherwise(pl.lit("true"))
        .alias("outcome"))
    extra = pl.concat([copies, conflicts])
    lines = [json.dumps({k: v for k, v in r.items() if v is not None})
             for r in extra.iter_rows(named=True)]
    lines += ['{"model": "model-1", "task": "task-1"}', "{not json", '{"model": "model-1", '
              '"task": "task-1", "item_id": "item-0", "outcome": "true", "confidence": 7}']
    (tmp / "extra.jsonl").write_text("\n".join(lines) + "\n")
    return [tmp / "big.parquet", tmp / "extra.jsonl"]


def test_duckdb_large_log(tmp_path):
    _need("duckdb", "duckdb")
    files = _large_log(tmp_path, 300_000)
    got = _assert_same(files, ("duckdb", {}))
    assert got.summary["records_duplicate"] == 2000
    assert got.summary["quarantine_reasons"]["conflicting duplicate"] == 2000


@pytest.mark.slow
@pytest.mark.ci
def test_spark_local_mode_few_million_rows(tmp_path, spark):
    """Spark in local mode on 2 million generated records plus bad and duplicate rows."""
    files = _large_log(tmp_path, 2_000_000)
    spark.conf.set("spark.sql.shuffle.partitions", "4")  # millions of rows: both cores (82 s, not 107 s)
    try:
        got = _assert_same(files, ("spark", {"session": spark}))
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "1")
    s = got.summary
    assert s["records_read"] == 2_000_000 + 3003
    assert s["records_duplicate"] == 2000
    assert s["quarantine_reasons"] == {"conflicting duplicate": 2000, "invalid JSON": 1,
                                       "invalid confidence": 1, "missing value": 1}
    assert got.cells.height == 500


def test_missing_engine_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    """Without duckdb (a dependency; gone after a --no-deps install), `reduce` says how to
    install it (exit 2), never a traceback."""
    from selfmodel.cli import main

    monkeypatch.setitem(sys.modules, "duckdb", None)  # import duckdb -> ImportError
    code = main(["reduce", str(CORPUS / "valid.csv"), "--out", str(tmp_path / "o")])
    errors = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
    assert code == 2 and len(errors) == 1
    assert "pip install duckdb" in errors[0]


@pytest.mark.parametrize("argv", [
    ["reduce", "x.jsonl", "--engine", "sqlite", "--out", "o"],
    ["reduce", "x.jsonl"],
    ["reduce", "--out", "o"],
])
def test_reduce_bad_arguments_are_one_line_exit_2(argv, capsys):
    from selfmodel.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and err.count("\n") == 0 and "selfmodel reduce --help" in err


def test_reduce_memory_limit_option(tmp_path, capsys):
    _need("duckdb", "duckdb")
    from selfmodel.cli import main

    out = tmp_path / "o"
    assert main(["reduce", str(CORPUS / "valid.csv"), "--memory-limit", "200MB",
                 "--out", str(out)]) == 0
    assert json.loads((out / "reduce.json").read_text())["records_used"] == 1
    code = main(["reduce", str(CORPUS / "valid.csv"), "--memory-limit", "lots",
                 "--out", str(tmp_path / "p")])
    errors = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
    assert code == 2 and len(errors) == 1 and "memory limit 'lots'" in errors[0]


# ----------------------------------------------------------------------------- one rule set


def test_a_rule_defined_once_is_applied_by_every_engine(tmp_path, engine, monkeypatch):
    """A rule added in one place (selfmodel.records.reduction.rules) quarantines the same rows in
    ingest (polars), DuckDB and Spark, beside the others."""
    import narwhals as nw

    from selfmodel.records import reduction

    shipped = reduction.rules

    def with_ban(tasks=None):
        return [*shipped(tasks), ("banned model", nw.col("model") == "evil",
                                  nw.concat_str([nw.lit("model '"), nw.col("model"),
                                                 nw.lit("' is banned")]))]

    monkeypatch.setattr(reduction, "rules", with_ban)
    p = tmp_path / "hostile.csv"
    p.write_text("model,task,item_id,prediction,outcome,confidence,sample,status\n"
                 "evil,t,1,yes,true,,,\n"           # the new rule
                 "evil,t,2,yes,true,2,,\n"          # an earlier rule names the reason
                 " evil ,t,3,no,true,,,\n"          # read as ingest reads it: stripped
                 "m,t,1,yes,true,,,\nm,t,2,no,true,,-1,\nm,t,3,no,,,,\n"
                 "m,t,4,no,true,,,weird\n{\"a\": 1},t,5,no,true,,,\nm,t,6,[1],true,,,\n")
    res = ingest([p])
    expected = {"banned model": 2, "invalid confidence": 1, "invalid identifier": 1,
                "invalid sample": 1, "invalid status": 1, "no outcome": 1, "invalid value": 1}
    assert res.summary["quarantine_reasons"] == expected
    assert "model 'evil' is banned" in res.quarantine["reason"].to_list()
    got = _assert_same([p], engine)
    assert got.summary["quarantine_reasons"] == expected


def test_jsonl_mixing_crlf_and_lf_line_ends(tmp_path, engine):
    """A JSONL file edited on two systems (CRLF and LF lines): the same cells as ingest's."""
    rows = [{"model": m, "task": "t", "item_id": str(i), "prediction": "true",
             "outcome": "true" if i % 3 else "false"} for m in ("a", "b") for i in range(12)]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"".join(json.dumps(r).encode() + (b"\r\n" if i % 2 else b"\n")
                              for i, r in enumerate(rows)))
    got = _assert_same([path], engine)
    assert got.summary["records_used"] == len(rows)


def test_duckdb_spills_into_a_folder_of_its_own_and_removes_it(tmp_path, monkeypatch):
    """DuckDB's spill folder is a new folder in the system's temporary folder, removed on
    close -- not DuckDB's default ``.tmp`` in the user's working folder."""
    import tempfile

    from selfmodel.records.engines.duckdb_engine import DuckDBEngine

    work, tmp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    eng = DuckDBEngine(memory_limit="100MB")
    ((spill,),) = eng.con.sql("SELECT current_setting('temp_directory')").fetchall()
    assert Path(spill).parent == tmp and Path(spill).name.startswith("selfmodel-duckdb-")
    assert Path(spill).is_dir()
    eng.close()
    assert not Path(spill).exists()
    reduce_records([CORPUS / "valid.csv"], engine="duckdb", engine_options={"memory_limit": "100MB"})
    with pytest.raises(InputError, match="memory limit 'lots'"):
        DuckDBEngine(memory_limit="lots")
    assert list(work.iterdir()) == [] and list(tmp.iterdir()) == []
