"""Out of core: DuckDB's reduction (``reduce_records``) equals ingest + cells.to_cells.

Reference values: ``selfmodel.records.cells.to_cells(selfmodel.records.ingest.ingest(paths).records)``
(and ``to_item_cells``) on the same files -- the in-memory path the pipeline uses. Edge cases
of reading (quoted newlines, BOM, CRLF, typed JSON, header names with spaces, random messy
rows); the engines' shared cases are in ``test_engines.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from selfmodel.records.cells import to_cells, to_item_cells
from selfmodel.records.contract import InputError
from selfmodel.records.engines import reduce_records
from selfmodel.records.ingest import ingest
from selfmodel.records.reduction import CELL_KEY, CELL_SCHEMA

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "data_raw" / "records.csv"
#: Data rows of the default file, counted by polars' own CSV reader (not by the reducer).
DEFAULT_ROWS = pl.read_csv(DEFAULT, infer_schema_length=0).height


#: The key of per-item counts (``to_item_cells`` without ``n_models_item``).
ITEM_KEY = (*CELL_KEY, "item_id")


def reference(paths, **kw):
    return to_cells(ingest(paths, **kw).records)


def reduce_cells(paths, **kw):
    return reduce_records(paths, engine="duckdb", **kw)


def reduce_items(paths, **kw):
    return reduce_records(paths, engine="duckdb", keys=ITEM_KEY, **kw).cells


def items_of(records):
    """to_item_cells of records, the counts ``reduce_records(keys=ITEM_KEY)`` gives."""
    return to_item_cells(records).drop("n_models_item")


def same_items(paths, records):
    got = reduce_items(paths)
    assert_frame_equal(got.select(items_of(records).columns), items_of(records))


def test_default_data_equals_ingest_to_cells():
    """On data_raw/records.csv the reduction equals to_cells(ingest(...).records) exactly."""
    got = reduce_cells([DEFAULT])
    assert_frame_equal(got.cells, reference([DEFAULT]))
    assert got.summary["records_read"] == got.summary["records_used"] == DEFAULT_ROWS
    assert tuple(got.cells.columns) == tuple(CELL_SCHEMA)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_default_data_other_formats(tmp_path, fmt):
    """The default records written as JSONL or typed Parquet reduce to the same cells and items."""
    frame = pl.read_csv(DEFAULT, infer_schema_length=0)
    path = tmp_path / f"records.{fmt}"
    if fmt == "jsonl":
        frame.write_ndjson(path)
    else:
        frame.with_columns(
            pl.col("confidence").cast(pl.Float64), pl.col("sample").cast(pl.Int64)
        ).write_parquet(path)
    assert_frame_equal(reduce_cells([path]).cells, reference([DEFAULT]))
    same_items([path], ingest([DEFAULT]).records)


def test_csv_header_names_with_spaces_are_read_as_ingest_reads_them(tmp_path):
    """A header cell `` model `` is the column ``model`` (ingest strips header names)."""
    path = tmp_path / "spaced.csv"
    path.write_text(" model , task ,item_id, prediction,outcome \n"
                    "a,w,1,lion,lion\na,w,2,cat,dog\nb,w,1,x,x\n")
    assert_frame_equal(reduce_cells([path]).cells, reference([path]))
    same_items([path], ingest([path]).records)


def test_csv_quoted_newlines_and_quotes(tmp_path):
    """Quoted fields holding newlines, commas and "" are read as ingest reads them.

    Reference: to_cells / to_item_cells of ingest on the same file (BOM, CRLF line ends).
    """
    rows = [
        {"model": "a", "task": "w", "item_id": str(i),
         "prediction": p, "outcome": o}
        for i, (p, o) in enumerate([
            ("two\nlines", "two\nlines"), ('say "hi", then\r\nbye', 'say "hi", then\r\nbye'),
            ("x", "y"), ('"', '"'), ("a,b", "a,b\n"), ("yes", "true"),
        ] * 3)
    ]
    path = tmp_path / "quoted.csv"
    body = pl.DataFrame(rows).write_csv(line_terminator="\r\n")
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    res = ingest([path])
    assert res.summary["records_used"] == len(rows)
    got = reduce_cells([path])
    assert_frame_equal(got.cells, to_cells(res.records))
    assert got.summary["records_read"] == len(rows)
    same_items([path], res.records)


def test_jsonl_typed_values_bom_crlf_blank_lines(tmp_path):
    """Typed JSON values (numbers, booleans, nested), a BOM, CRLF, blank lines, no final newline.

    Reference: to_cells / to_item_cells of ingest on the same file.
    """
    rows = [
        {"model": "a", "task": "t", "item_id": 1, "prediction": True, "outcome": True,
         "confidence": 0.9, "sample": 0},
        {"model": "a", "task": "t", "item_id": 2, "prediction": "no", "outcome": False,
         "correct": True, "sample": 1.0},
        {"model": "a", "task": "t", "item_id": 3, "prediction": None, "outcome": False},
        {"model": "a", "task": "t", "item_id": 4, "prediction": True, "outcome": False,
         "confidence": 2},
        {"model": "b", "task": "t", "item_id": 1, "prediction": {"x": 1}, "outcome": {"x": 1}},
        {"model": "b", "task": "t", "item_id": 2, "prediction": 1, "outcome": 0,
         "status": "REFUSED"},
    ]
    lines = [json.dumps(r) for r in rows]
    text = "\ufeff" + "\r\n".join(lines[:3]) + "\r\n\r\n   \n" + "\n".join(lines[3:])
    path = tmp_path / "typed.jsonl"
    path.write_bytes(text.encode())
    res = ingest([path])
    got = reduce_cells([path])
    assert_frame_equal(got.cells, to_cells(res.records))
    assert got.summary["records_read"] == res.summary["records_read"] == len(rows)
    # confidence 2 and an object in prediction/outcome (not one value)
    assert got.summary["records_quarantined"] == res.summary["records_quarantined"] == 2
    same_items([path], res.records)


@pytest.mark.parametrize(
    ("bad", "what"),
    [
        ('{"model": "a", "task": ', "invalid JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"model": NaN}', "missing value"),  # Python's JSON reads NaN: a missing model
        (b'{"model": "\xff"}', "invalid UTF-8"),
    ],
)
def test_bad_jsonl_line_is_quarantined_with_its_line(tmp_path, bad, what):
    """A bad line far from the first is quarantined with its reason, as ingest quarantines it.

    Reference: the source_line and reason that ingest gives the same line in its quarantine.
    """
    good = json.dumps({"model": "a", "task": "t", "item_id": "1", "prediction": "true",
                       "outcome": "true"})
    raw = bad if isinstance(bad, bytes) else bad.encode()
    body = (good + "\n") * 30 + "\n" + (good + "\n") * 6
    data = body.encode() + raw + b"\n" + (good + "\n").encode() * 3
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    res = ingest([path])
    assert res.quarantine["source_line"].to_list() == [38]
    assert res.summary["quarantine_reasons"] == {what: 1}
    got = reduce_cells([path])
    assert got.summary["records_quarantined"] == 1
    assert got.summary["quarantine_reasons"] == res.summary["quarantine_reasons"]
    assert_frame_equal(got.cells, to_cells(res.records))


def test_ragged_csv_row_is_quarantined_as_ingest_does(tmp_path):
    """A CSV row with too many fields, after a quoted field over two lines: quarantined.

    Reference: ingest's quarantine of the same file (header = line 1, a quoted field spans
    lines 2-3, the bad row is line 24).
    """
    path = tmp_path / "ragged.csv"
    path.write_text("model,task,item_id,prediction,outcome\n"
                    'a,t,0,"two\nlines",x\n' + "a,t,1,true,true\n" * 20
                    + "a,t,2,true,true,x\n" + "a,t,3,true,true\n")
    res = ingest([path])
    assert res.quarantine["source_line"].to_list() == [24]
    got = reduce_cells([path])
    assert got.summary["quarantine_reasons"] == res.summary["quarantine_reasons"]
    assert_frame_equal(got.cells, to_cells(res.records))


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_items_equal_to_item_cells(tmp_path, fmt):
    """Per-item counts (``keys=ITEM_KEY``) equal to_item_cells(ingest(...).records) on the default data.

    Reference: selfmodel.records.cells.to_item_cells(ingest(data_raw/records.csv).records).
    """
    path = DEFAULT
    if fmt != "csv":
        path = tmp_path / f"records.{fmt}"
        frame = pl.read_csv(DEFAULT, infer_schema_length=0)
        frame.write_ndjson(path) if fmt == "jsonl" else frame.write_parquet(path)
    got = reduce_items([path])
    ref = items_of(ingest([DEFAULT]).records)
    assert got.height == ref.height
    assert_frame_equal(got.select(ref.columns), ref)


MESSY = [
    # normalisation: booleans written many ways, whitespace, case, status default
    {"model": " a ", "task": "t", "item_id": "1", "prediction": "YES", "outcome": "true"},
    {"model": "a", "task": "t", "item_id": "2", "prediction": "n", "outcome": "1", "status": "OK"},
    {"model": "a", "task": "t", "item_id": "3", "prediction": "", "outcome": "false"},
    {"model": "a", "task": "t", "item_id": "4", "prediction": "true", "outcome": "true",
     "status": "refused"},
    {"model": "a", "task": "t", "item_id": "5", "correct": "yes", "prediction": "true"},
    {"model": "a", "task": "t", "item_id": "6", "prediction": "true", "outcome": "false",
     "correct": "0"},
    # free text: not binary
    {"model": "a", "task": "w", "item_id": "1", "prediction": "cat", "outcome": "cat"},
    {"model": "a", "task": "w", "item_id": "2", "prediction": "dog", "outcome": "Cat"},
    # cross-prediction: not a self-prediction
    {"model": "a", "task": "t", "item_id": "7", "predictor": "b", "prediction": "true",
     "outcome": "true"},
    # rows ingest quarantines
    {"model": "", "task": "t", "item_id": "8", "prediction": "true", "outcome": "true"},
    {"model": "a", "task": "t", "item_id": "9", "prediction": "true", "outcome": "true",
     "status": "weird"},
    {"model": "a", "task": "t", "item_id": "10", "prediction": "true", "outcome": "true",
     "confidence": "1.5"},
    {"model": "a", "task": "t", "item_id": "11", "prediction": "true", "outcome": "true",
     "sample": "-1"},
    {"model": "a", "task": "t", "item_id": "12", "prediction": "true", "outcome": "true",
     "correct": "maybe"},
    {"model": "a", "task": "t", "item_id": "13", "prediction": "true"},
    {"model": "a", "task": "t", "item_id": "14", "prediction": "true", "outcome": "true",
     "correct": "false"},
    {"model": "b", "task": "t", "item_id": "1", "prediction": "false", "outcome": "false",
     "sample": "2.0", "confidence": "0.7"},
]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_messy_rows_follow_ingest_rules(tmp_path, fmt):
    """Normalisation and the quarantine rules match ingest on hand-made edge cases."""
    frame = pl.DataFrame(MESSY, infer_schema_length=None)
    path = tmp_path / f"messy.{fmt}"
    if fmt == "csv":
        frame.write_csv(path)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in MESSY))
    res = ingest([path])
    got = reduce_cells([path])
    assert_frame_equal(got.cells, to_cells(res.records))
    assert got.summary["records_quarantined"] == res.summary["records_quarantined"] == 7
    same_items([path], res.records)


def test_mapping_and_tasks(tmp_path):
    """--map style mapping and an allowed-task list behave as in ingest."""
    path = tmp_path / "mapped.csv"
    pl.DataFrame(
        {"model": ["a", "a", "a"], "task": ["t", "t", "u"], "qid": ["1", "2", "1"],
         "prediction": ["true", "false", "true"], "outcome": ["true", "true", "true"]}
    ).write_csv(path)
    from selfmodel.records.ingest import IngestConfig

    config = IngestConfig(tasks=("t",))
    got = reduce_cells([path], mapping={"item_id": "qid"}, config=config)
    ref = to_cells(ingest([path], mapping={"item_id": "qid"}, config=config).records)
    assert_frame_equal(got.cells, ref)
    assert got.summary["records_quarantined"] == 1


def test_missing_required_column_is_input_error(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("model,task,prediction,outcome\na,t,true,true\n")
    with pytest.raises(InputError, match="item_id"):
        reduce_cells([path])


VALUES = st.sampled_from(["true", "false", "TRUE", " yes ", "no", "0", "1", "", "maybe", "cat"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.fixed_dictionaries(
            {"model": st.sampled_from(["a", "b", ""]), "task": st.sampled_from(["t", "u"]),
             "prediction": VALUES, "outcome": VALUES,
             "correct": st.sampled_from(["", "true", "false", "x"]),
             "status": st.sampled_from(["", "ok", "OK", "unparsed", "refused", "bogus"]),
             "predictor": st.sampled_from(["", "a", "b"])}
        ),
        min_size=1, max_size=30,
    ),
    fmt=st.sampled_from(["csv", "jsonl"]),
)
def test_property_equals_ingest(tmp_path, rows, fmt):
    """For random messy rows (unique ids; CSV or JSONL), DuckDB's reduction equals ingest.

    Reference: to_cells and to_item_cells of ingest(...).records on the same file.
    """
    frame = pl.DataFrame(
        [{**r, "item_id": str(i % 7), "sample": str(i // 7)} for i, r in enumerate(rows)],
        infer_schema_length=None,
    )
    path = tmp_path / f"p.{fmt}"
    frame.write_csv(path) if fmt == "csv" else frame.write_ndjson(path)
    try:
        ref = ingest([path])
    except InputError as exc:  # ingest found no usable row: so does the engine, in its words
        with pytest.raises(InputError) as got_exc:
            reduce_cells([path])
        assert str(got_exc.value) == str(exc)
        return
    got = reduce_cells([path])
    assert_frame_equal(got.cells, to_cells(ref.records))
    assert got.summary["records_quarantined"] == ref.summary["records_quarantined"]
    assert got.summary["records_duplicate"] == ref.summary["records_duplicate"]


def test_documented_sql_equals_to_cells():
    """The SQL block of docs/performance.md ("Streaming reduction") run by SQLite equals to_cells.

    Reference: to_cells(ingest(data_raw/records.csv).records).
    """
    import re
    import sqlite3

    doc = (ROOT / "docs" / "performance.md").read_text()
    blocks = re.findall(r"```sql\n(.*?)```", doc, re.S)
    assert len(blocks) == 1
    records = ingest([DEFAULT]).records
    con = sqlite3.connect(":memory:")
    cols = records.columns
    con.execute(f"CREATE TABLE records ({', '.join(cols)})")
    con.executemany(f"INSERT INTO records VALUES ({', '.join('?' * len(cols))})", records.rows())
    cur = con.execute(blocks[0])
    names = [d[0] for d in cur.description]
    got = pl.DataFrame(cur.fetchall(), schema=names, orient="row").with_columns(
        pl.col("binary").cast(pl.Boolean)
    )
    ref = to_cells(records)
    assert_frame_equal(got.select(ref.columns), ref, check_dtypes=False)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_one_reading_of_values_as_ingest(tmp_path, fmt):
    """Numbers as booleans, missing spellings, only `correct`, non-boolean in a binary task."""
    rows = [
        ("m", "t", "1", "1.0", "True", None),
        ("m", "t", "2", " 0.0 ", "true", None),
        ("m", "t", "3", "NaN", "false", None),
        ("m", "t", "4", "None", "false", None),
        ("m", "t", "5", "maybe", "true", None),
        ("m", "t", "6", None, None, "true"),
        ("m", "w", "7", "cat", "dog", None),
        ("m", "w", "8", "nan", "dog", None),
    ]
    frame = pl.DataFrame(rows, schema=["model", "task", "item_id", "prediction", "outcome",
                                       "correct"], orient="row")
    path = tmp_path / f"r.{fmt}"
    if fmt == "csv":
        frame.write_csv(path)
    else:
        path.write_text("".join(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n"
                                for r in frame.iter_rows(named=True)))
    cells = reduce_cells([path]).cells
    assert_frame_equal(cells, reference([path]))
    t = cells.filter(pl.col("task") == "t").row(0, named=True)
    # readable: 1 (right), 2 (wrong), 6 (correct only); unreadable: 3, 4 (missing), 5 (maybe)
    assert (t["n_total"], t["n"], t["k"], t["n_unreadable"]) == (6, 3, 2, 3)
    w = cells.filter(pl.col("task") == "w").row(0, named=True)
    assert (w["n_total"], w["n"], w["k"], w["n_unreadable"]) == (2, 1, 0, 1)


def test_no_records_error_is_ingests_with_ties_ordered_by_name(tmp_path):
    """A file that keeps no record: DuckDB's error is ingest's, word for word, the reasons
    ordered by count and then by name (found by the property test above: ingest listed ties
    in the order the rows came), with ingest's scale hint when confidence leads."""
    path = tmp_path / "none.csv"
    path.write_text("model,task,item_id,prediction,outcome,correct,status,confidence\n"
                    "a,t,1,true,true,,bogus,\n"           # invalid status
                    "a,t,2,true,true,false,,\n"           # correct disagrees
                    "a,t,3,true,true,,,7\na,t,4,true,true,,,8\n")  # invalid confidence x2
    with pytest.raises(InputError) as ref:
        ingest([path])
    with pytest.raises(InputError) as got:
        reduce_cells([path])
    assert str(got.value) == str(ref.value)
    assert ("4 quarantined: invalid confidence 2, correct disagrees 1, invalid status 1"
            in str(ref.value))
    assert "[confidence] scale = [0, 10]" in str(ref.value)
