"""analysis.reduce: the streaming reduction equals ingest + cells.to_cells.

Reference values: ``analysis.cells.to_cells(analysis.ingest.ingest(paths).records)`` on the
same files -- the in-memory path the pipeline uses.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from analysis.cells import to_cells
from analysis.contract import InputError
from analysis.ingest import ingest
from analysis.reduce import CELL_COLUMNS, reduce_cells

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "data_raw" / "records.csv"


def reference(paths, **kw):
    return to_cells(ingest(paths, **kw).records)


def test_default_data_equals_ingest_to_cells():
    """On data_raw/records.csv the reduction equals to_cells(ingest(...).records) exactly."""
    got = reduce_cells([DEFAULT])
    assert_frame_equal(got.cells, reference([DEFAULT]))
    assert got.summary["rows_read"] == 13600
    assert got.summary["rows_excluded"] == 0
    assert tuple(got.cells.columns) == CELL_COLUMNS


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_default_data_other_formats(tmp_path, fmt):
    """The default records written as JSONL or typed Parquet reduce to the same cells."""
    frame = pl.read_csv(DEFAULT, infer_schema_length=0)
    path = tmp_path / f"records.{fmt}"
    if fmt == "jsonl":
        frame.write_ndjson(path)
    else:
        frame.with_columns(
            pl.col("confidence").cast(pl.Float64), pl.col("sample").cast(pl.Int64)
        ).write_parquet(path)
    assert_frame_equal(reduce_cells([path]).cells, reference([DEFAULT]))


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
    assert got.summary["rows_excluded"] == res.summary["records_quarantined"] == 7
    assert got.summary["rows_cross"] == 1


def test_mapping_and_tasks(tmp_path):
    """--map style mapping and an allowed-task list behave as in ingest."""
    path = tmp_path / "mapped.csv"
    pl.DataFrame(
        {"model": ["a", "a", "a"], "task": ["t", "t", "u"], "qid": ["1", "2", "1"],
         "prediction": ["true", "false", "true"], "outcome": ["true", "true", "true"]}
    ).write_csv(path)
    got = reduce_cells([path], mapping={"item_id": "qid"}, tasks=["t"])
    from analysis.ingest import IngestConfig

    ref = to_cells(ingest([path], mapping={"item_id": "qid"},
                          config=IngestConfig(tasks=("t",))).records)
    assert_frame_equal(got.cells, ref)
    assert got.summary["rows_excluded"] == 1


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
    )
)
def test_property_equals_ingest(tmp_path, rows):
    """For random messy CSV rows (unique item ids), reduce equals to_cells(ingest(...))."""
    frame = pl.DataFrame(
        [{**r, "item_id": str(i)} for i, r in enumerate(rows)], infer_schema_length=None
    )
    path = tmp_path / "p.csv"
    frame.write_csv(path)
    got = reduce_cells([path])
    try:
        ref = ingest([path])
    except InputError:  # ingest found no usable row: reduce must exclude every row
        assert got.cells.height == 0
        assert got.summary["rows_excluded"] == got.summary["rows_read"] == len(rows)
        return
    assert_frame_equal(got.cells, to_cells(ref.records))
    assert got.summary["rows_excluded"] == ref.summary["records_quarantined"]


def test_documented_sql_equals_to_cells():
    """CELLS_SQL (quoted verbatim in docs/performance.md) run by SQLite equals to_cells.

    Reference: to_cells(ingest(data_raw/records.csv).records).
    """
    import sqlite3

    from analysis.reduce import CELLS_SQL

    records = ingest([DEFAULT]).records
    con = sqlite3.connect(":memory:")
    cols = records.columns
    con.execute(f"CREATE TABLE records ({', '.join(cols)})")
    con.executemany(f"INSERT INTO records VALUES ({', '.join('?' * len(cols))})", records.rows())
    cur = con.execute(CELLS_SQL)
    names = [d[0] for d in cur.description]
    got = pl.DataFrame(cur.fetchall(), schema=names, orient="row").with_columns(
        pl.col("binary").cast(pl.Boolean)
    )
    ref = to_cells(records)
    assert_frame_equal(got.select(ref.columns), ref, check_dtypes=False)
    doc = (ROOT / "docs" / "performance.md").read_text()
    assert CELLS_SQL.strip() in doc
