"""A streamed ingest gives the same files as one in memory, and reading in batches changes nothing.

Streamed (``ingest(..., stream=True)``, :mod:`selfmodel.records.ingest.stream`): the batches'
rows are spilled to disk, sorted in key ranges and de-duplicated a range at a time. In memory: all
rows at once. Both must write byte-identical ``records.parquet`` and ``quarantine.parquet``
and the same ``ingest.json`` (but ``streamed``), whatever the batch sizes: here they are made
tiny (a few bytes, rows and records) so that every file is many batches, the sort uses many
key ranges and quarantine buckets, and row groups hold a few rows.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from selfmodel.cli import main
from selfmodel.records.contract import InputError
from selfmodel.records.ingest import ingest, parse_map_options, readers, stream, write_ingest

# the bad-input corpus and its generated cases are tests/end_to_end/test_bad_inputs.py's
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "end_to_end"))
from test_bad_inputs import CASES, CORPUS, GENERATED, _generated_case  # noqa: E402


@pytest.fixture
def tiny_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 64 bytes, 2 CSV records, 2 Parquet rows; key ranges of about 5 rows (every
    key sampled), quarantine buckets of 3 lines, row groups of 4 rows."""
    monkeypatch.setattr(readers, "BATCH_BYTES", 64)
    monkeypatch.setattr(readers, "CSV_BATCH_RECORDS", 2)
    monkeypatch.setattr(readers, "PARQUET_BATCH_ROWS", 2)
    monkeypatch.setattr(stream, "BUCKET_ROWS", 5)
    monkeypatch.setattr(stream, "SAMPLE_EVERY", 1)
    monkeypatch.setattr(stream, "QUARANTINE_BUCKET_LINES", 3)
    monkeypatch.setattr(stream, "ROW_GROUP", 4)


def _both(paths: list[Any], out: Path, **kw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Ingest in memory and streamed into ``out/memory`` and ``out/streamed``; the summaries."""
    summaries = []
    for name, streamed in (("memory", False), ("streamed", True)):
        res = ingest(paths, stream=streamed, **kw)
        assert res.streamed is streamed
        write_ingest(res, out / name)
        summaries.append(json.loads((out / name / "ingest.json").read_text()))
    return summaries[0], summaries[1]


def _assert_same_files(out: Path) -> None:
    for table in ("records.parquet", "quarantine.parquet"):
        assert (out / "memory" / table).read_bytes() == (out / "streamed" / table).read_bytes(), table
    memory, streamed = (json.loads((out / n / "ingest.json").read_text()) for n in ("memory", "streamed"))
    assert memory.pop("streamed") is False and streamed.pop("streamed") is True
    assert memory == streamed


def _case_kwargs(case: dict[str, Any]) -> dict[str, Any]:
    return {"mapping": parse_map_options(case.get("map", [])) or None,
            "config": case.get("config"), "registry": case.get("registry")}


QUARANTINE_CASES = [c for c in CASES if c["expect"] == "quarantine"]
GENERATED_OK = [n for n, (_, case) in GENERATED.items() if case.get("expect") != "exit2"]


@pytest.mark.parametrize("case", QUARANTINE_CASES, ids=[c["name"] for c in QUARANTINE_CASES])
def test_every_corpus_case_streamed_is_byte_identical(
    case: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_batches: None
) -> None:
    monkeypatch.chdir(case.get("folder", CORPUS))
    memory, _ = _both(case["files"], tmp_path, **_case_kwargs(case))
    _assert_same_files(tmp_path)
    assert (memory["records_read"], memory["records_used"], memory["records_quarantined"],
            memory["records_duplicate"]) == (case["read"], case["used"], case["quarantined"],
                                             case["duplicate"])


@pytest.mark.parametrize("name", GENERATED_OK)
def test_every_generated_case_streamed_is_byte_identical(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_batches: None
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    case = _generated_case(name, folder)
    monkeypatch.chdir(folder)
    _both(case["files"], tmp_path / "out", **_case_kwargs(case))
    _assert_same_files(tmp_path / "out")


def _mixed(folder: Path) -> list[Path]:
    """Files of every format with every kind of row: copies of one key within and across
    files and batches, conflicts, bad lines, blank lines, a byte-order mark, CRLF, quoted
    line breaks, ragged and non-UTF-8 rows, typed and nested Parquet columns, gzip."""
    base = {"task": "refusal", "prediction": "yes", "outcome": "yes"}
    lines = []
    for i in range(40):
        row = {**base, "model": f"m{i % 3}", "item_id": f"q{i % 7}", "sample": i % 2}
        if i % 9 == 0:
            row["prediction"] = "no"  # a conflict with the copies that say yes
        if i % 11 == 0:
            row["confidence"] = "NaN"
        lines.append(json.dumps(row))
    lines[5] = '{"model": "m1", "task"'  # broken
    lines[12] = ""  # blank
    lines[20] = json.dumps({**base, "model": "m\u00002", "item_id": "q1"})
    lines[21] = json.dumps({**base, "model": "m2", "item_id": "q9", "prediction": ["yes"]})
    lines[22] = '{"model": "m2", "model": "m3", "task": "refusal", "item_id": "x", "outcome": 1}'
    (folder / "a.jsonl").write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    csv_rows = ["model,task,item_id,prediction,outcome,cluster"]
    for i in range(30):
        csv_rows.append(f"m{i % 2},refusal,q{i % 5},{'yes' if i % 4 else 'no'},yes,c{i}")
    csv_rows[7] = 'm1,refusal,q3,yes,yes,"two\nlines"'
    csv_rows[9] = "m1,refusal,q3,yes,yes,c,extra"
    (folder / "b.csv").write_bytes("\n".join(csv_rows).encode() + b"\nm9,refusal,q\xff,yes,yes,c\n")
    (folder / "plain.csv").write_text("\n".join(
        f"m{i % 2},refusal,p{i % 4},yes,{'yes' if i % 3 else 'no'},c" if i else
        "model,task,item_id,prediction,outcome,cluster" for i in range(25)) + "\n")
    pl.DataFrame({
        "model": [f"m{i % 3}" for i in range(12)], "task": ["refusal"] * 12,
        "item_id": [f"q{i % 4}" for i in range(12)],
        "prediction": [bool(i % 2) for i in range(12)], "outcome": [True] * 12,
        "confidence": [0.5 if i != 3 else float("nan") for i in range(12)],
        "cluster": [None if i != 4 else ["a"] for i in range(12)],
    }).write_parquet(folder / "c.parquet")
    gz = "\n".join(json.dumps({**base, "model": "m0", "item_id": f"q{i % 3}", "run_id": "g"})
                   for i in range(9)) + "\n"
    (folder / "d.jsonl.gz").write_bytes(gzip.compress(gz.encode()))
    (folder.parent / "registry.csv").write_text("model,family,params_b\nm0,f,1\nm1,f,2\nm2,g,3\n")
    return [folder]


def test_a_mixed_folder_streamed_is_byte_identical(tmp_path: Path, tiny_batches: None) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    paths = _mixed(folder)
    memory, _ = _both(paths, tmp_path / "out", registry=tmp_path / "registry.csv")
    _assert_same_files(tmp_path / "out")
    reasons = memory["quarantine_reasons"]
    for cat in ("conflicting duplicate", "invalid JSON", "invalid identifier", "invalid value",
                "duplicate key", "invalid confidence", "wrong number of fields", "invalid UTF-8"):
        assert reasons.get(cat), (cat, reasons)
    assert memory["records_duplicate"] > 0
    # several row groups of 4 rows, whatever the batches were
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(tmp_path / "out" / "streamed" / "records.parquet").metadata
    assert meta.num_row_groups > 2 and meta.row_group(0).num_rows == 4


def test_reading_in_batches_changes_no_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    """The mixed folder read in one batch per file and in batches of a few bytes: the same
    records, quarantine and counts."""
    folder = tmp_path / "in"
    folder.mkdir()
    paths = _mixed(folder)
    whole = ingest(paths, stream=False, registry=tmp_path / "registry.csv")
    monkeypatch.setattr(readers, "BATCH_BYTES", 64)
    monkeypatch.setattr(readers, "CSV_BATCH_RECORDS", 2)
    monkeypatch.setattr(readers, "PARQUET_BATCH_ROWS", 2)
    batched = ingest(paths, stream=False, registry=tmp_path / "registry.csv")
    assert whole.records.equals(batched.records)
    assert whole.quarantine.equals(batched.quarantine)
    for key in ("records_read", "records_used", "records_quarantined", "records_duplicate",
                "quarantine_reasons", "files", "sha256", "statuses", "ignored_columns"):
        assert whole.summary[key] == batched.summary[key], key


def test_a_csv_file_with_line_breaks_in_fields_is_read_record_by_record_in_batches(
    tmp_path: Path, tiny_batches: None
) -> None:
    path = tmp_path / "q.csv"
    rows = ["model,task,item_id,prediction,outcome,note"]
    rows += [f'm1,refusal,q{i},yes,yes,"line one\nline two {i}"' for i in range(9)]
    path.write_text("\n".join(rows) + "\n")
    res = ingest([path], stream=True)
    assert res.records.get_column("source_line").to_list() == [2 + 2 * i for i in range(9)]
    assert res.summary["files"][0]["rows"] == 9


def _late_key_file(path: Path, key: str, *, late: bool) -> None:
    """1,500 lines; ``key`` given only on line 1,200 (``late``) or on none."""
    lines = []
    for i in range(1500):
        row = {"model": "m1", "task": "refusal", "item_id": f"q{i}", "prediction": "yes",
               "outcome": "yes"}
        if late and i == 1199:
            row[key] = "from-the-file"
        lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("late", [True, False])
def test_a_defaulted_key_first_given_after_the_sampled_lines_is_read_as_in_one_batch(
    late: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key past the first 1,000 lines decides whether the file has the column (then a
    [defaults] value does not apply): every batch decides as the whole file does."""
    path = tmp_path / "r.jsonl"
    _late_key_file(path, "cluster", late=late)
    config = tmp_path / "cfg.toml"
    config.write_text('[defaults]\ncluster = "default"\n')
    whole = ingest([path], config=config, stream=False)
    monkeypatch.setattr(readers, "BATCH_BYTES", 4096)
    batched = ingest([path], config=config, stream=True)
    assert whole.records.equals(batched.records)
    clusters = set(batched.records.get_column("cluster").to_list())
    assert clusters == ({None, "from-the-file"} if late else {"default"})


def test_a_required_key_first_given_after_the_sampled_lines(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    path = tmp_path / "r.jsonl"
    _late_key_file(path, "condition", late=True)
    monkeypatch.setattr(readers, "BATCH_BYTES", 4096)
    res = ingest([path], mapping={"condition": "condition"}, stream=True)
    assert res.records.filter(pl.col("condition").is_not_null()).height == 1


def test_a_large_input_is_streamed_by_itself_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.jsonl"
    _late_key_file(path, "cluster", late=False)
    monkeypatch.setenv(stream.STREAM_ENV, "10K")
    said: list[str] = []
    assert ingest([path], say=said.append).streamed
    assert len(said) == 1 and "validated in batches and sorted on disk" in said[0]
    assert "SELFMODEL_STREAM_ABOVE" in said[0]
    monkeypatch.setenv(stream.STREAM_ENV, "1G")
    assert not ingest([path], say=said.append).streamed and len(said) == 1
    monkeypatch.setenv(stream.STREAM_ENV, "10K")
    assert main(["ingest", str(path), "--out", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    assert "sorted on disk" in captured.err and "Traceback" not in captured.err
    assert json.loads((tmp_path / "out" / "ingest.json").read_text())["streamed"] is True
    assert pl.read_parquet(tmp_path / "out" / "records.parquet").height == 1500
    monkeypatch.setenv(stream.STREAM_ENV, "lots")
    assert main(["ingest", str(path), "--out", str(tmp_path / "out2")]) == 2
    err = capsys.readouterr().err
    assert "SELFMODEL_STREAM_ABOVE='lots' is not a size" in err and "Traceback" not in err


def test_a_streamed_ingest_leaves_no_temporary_files(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Not after a success (the tables are moved out), nor after an error."""
    spills = tmp_path / "tmp"
    spills.mkdir()
    monkeypatch.setenv("TMPDIR", str(spills))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    path = tmp_path / "r.jsonl"
    _late_key_file(path, "cluster", late=False)
    res = ingest([path], stream=True)
    write_ingest(res, tmp_path / "out")
    assert res.records.height == 1500  # read from where it was written
    del res
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"model": "m1", "task": "t", "item_id": "1"}\n')  # no outcome
    with pytest.raises(InputError, match="no records to analyse"):
        ingest([bad], stream=True)
    assert [p for p in spills.iterdir() if p.name.startswith("selfmodel-ingest-")] == []


def test_a_full_temporary_folder_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    def full(self: Any, kind: str, frame: pl.DataFrame) -> None:
        raise stream._no_room(self.folder, OSError(28, os.strerror(28)))

    monkeypatch.setattr(stream.Spill, "add", full)
    path = tmp_path / "r.jsonl"
    _late_key_file(path, "cluster", late=False)
    with pytest.raises(InputError) as info:
        ingest([path], stream=True)
    assert "No space left on device" in str(info.value) and "TMPDIR" in str(info.value)


def test_the_sort_key_orders_as_polars_sorts_the_record_key() -> None:
    """Prefixes, case, accents, emoji, nulls first, samples of many digits: the one text of
    ``stream.sort_key`` sorts as the key's columns do (the streamed order is the in-memory one)."""
    import random

    from selfmodel.records.contract import KEY

    rng = random.Random(7)
    alphabet = ["a", "ab", "B", "\u00e9", "e\u0301", "\u4e2d", "\U0001f600", "~", " x", "a b", "0"]
    n = 3000

    def text(nullable: bool) -> list[str | None]:
        return [None if nullable and rng.random() < 0.3 else
                "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 3))) for _ in range(n)]

    frame = pl.DataFrame({
        "model": text(False), "predictor": text(False), "task": text(False),
        "condition": text(True), "item_id": text(False), "run_id": text(True),
        "sample": [rng.choice([0, 1, 9, 10, 11, 10**12, 2**62]) for _ in range(n)],
    }).with_row_index("i")
    by_columns = frame.sort(list(KEY), nulls_last=False, maintain_order=True)
    by_text = frame.with_columns(stream.sort_key().alias("k")).sort("k", maintain_order=True)
    assert by_columns.get_column("i").to_list() == by_text.get_column("i").to_list()


@pytest.mark.parametrize("batched", [False, True])
def test_the_raw_text_of_a_quarantined_csv_record_spanning_lines_is_all_its_lines(
    batched: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record's lines are found again by reading the file (not kept while reading)."""
    if batched:
        monkeypatch.setattr(readers, "BATCH_BYTES", 64)
        monkeypatch.setattr(readers, "CSV_BATCH_RECORDS", 2)
    rows = ["model,task,item_id,prediction,outcome,confidence"]
    rows += [f'm1,t,q{i},"a\nb {i}",x,{"7" if i in (3, 4, 8) else "0.5"}' for i in range(10)]
    path = tmp_path / "r.csv"
    path.write_text("\n".join(rows) + "\n")
    res = ingest([path], stream=batched)
    assert res.quarantine.select("source_line", "raw").rows() == [
        (2 + 2 * i, f'm1,t,q{i},"a\nb {i}",x,7') for i in (3, 4, 8)]


def test_a_parquet_file_counts_its_rows_not_its_compressed_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parquet compresses records ten times or more: 2,000 rows count as 300 KB of input."""
    path = tmp_path / "r.parquet"
    pl.DataFrame({"model": ["m1"] * 2000, "task": ["t"] * 2000,
                  "item_id": [f"q{i}" for i in range(2000)], "outcome": [True] * 2000}
                 ).write_parquet(path)
    assert path.stat().st_size < 100_000
    monkeypatch.setenv(stream.STREAM_ENV, "200K")
    assert ingest([path]).streamed
    monkeypatch.setenv(stream.STREAM_ENV, "400K")
    assert not ingest([path]).streamed


def test_a_mappings_row_positions_count_across_batches(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """``item_id = "@row"``: a row's position in its file, whatever batch it is read in
    (unreadable rows count too)."""
    from selfmodel.records.importers.mapping.records_apply import load_transform

    mapping = tmp_path / "m.toml"
    mapping.write_text('format = "records"\nmodel = "m1"\ntask = "t"\nitem_id = "@row"\n')
    rows = ["prediction,outcome"] + [f"{'yes' if i % 3 else 'no'},yes" for i in range(30)]
    rows[12] = "yes,yes,extra"  # unreadable: wrong number of fields, still a position
    path = tmp_path / "r.csv"
    path.write_text("\n".join(rows) + "\n")
    whole = ingest([path], transform=load_transform(mapping), stream=False)
    monkeypatch.setattr(readers, "BATCH_BYTES", 40)
    monkeypatch.setattr(readers, "CSV_BATCH_RECORDS", 4)
    batched = ingest([path], transform=load_transform(mapping), stream=True)
    assert whole.records.equals(batched.records)
    ids = sorted(int(i) for i in batched.records.get_column("item_id").to_list())
    assert ids == [i for i in range(1, 31) if i != 12]
