"""Hostile use through the CLI (issue 14): exit 2 and one line, never a traceback.

Covers an unusable ``--out`` (a file, under a file, read-only), a full disk (a patched write
raising ``ENOSPC``), models without a family (each is its own family, never pooled), list
and object identifiers and duplicate JSON keys through ``selfmodel ingest``. Interrupted
runs (the outputs of a run belong together) are in ``tests/common/test_outputs.py``.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import polars as pl
import pytest

from selfmodel.cli import main
from selfmodel.records.cells import OWN_FAMILY, build_cells
from selfmodel.records.ingest import ingest
from selfmodel.records.registry import load_registry

CORPUS = Path(__file__).parents[1] / "bad_inputs"
VALID = CORPUS / "valid.jsonl"


def _one_line_error(capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("selfmodel: error:")]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.mark.parametrize("command", ["run", "ingest"])
def test_out_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    out = tmp_path / "taken"
    out.write_text("not a folder")
    args = [command, str(VALID), "--out", str(out)]
    assert main(args + (["--no-report"] if command == "run" else [])) == 2
    _one_line_error(capsys, str(out))
    assert out.read_text() == "not a folder"


def test_out_under_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parent = tmp_path / "file"
    parent.write_text("x")
    out = parent / "sub"
    assert main(["run", str(VALID), "--out", str(out), "--no-report"]) == 2
    _one_line_error(capsys, "lies under the file", str(parent))


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permissions")
def test_out_read_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o500)
    try:
        assert main(["ingest", str(VALID), "--out", str(out)]) == 2
    finally:
        out.chmod(0o700)
    _one_line_error(capsys, "ermission denied", "--out")


def test_full_disk_during_ingest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: every write of a data frame fails as on a full disk (polars' writer,
    and Arrow's, which writes records.parquet and quarantine.parquet in row groups)."""
    import pyarrow.parquet as pq

    def full(self, file=None, *a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(file))

    monkeypatch.setattr(pl.DataFrame, "write_parquet", full)
    monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    out = tmp_path / "out"
    assert main(["ingest", str(VALID), "--out", str(out)]) == 2
    _one_line_error(capsys, "No space left on device", "Free disk space")


def test_model_without_family_is_its_own_family(tmp_path: Path) -> None:
    rec = tmp_path / "r.csv"
    rec.write_text("model,task,item_id,prediction,outcome\n"
                   + "".join(f"{m},t,{i},true,true\n" for m in ("a", "b", "c") for i in range(3)))
    reg = tmp_path / "models.csv"
    reg.write_text("model,family,params_b\na,,1\nb,,2\nc,fam,3\n")
    cells = build_cells(ingest([rec]).records, load_registry(reg))
    families = dict(cells.select("model", "family").unique().iter_rows())
    assert families == {"a": OWN_FAMILY.format("a"), "b": OWN_FAMILY.format("b"), "c": "fam"}
    assert len(set(families.values())) == 3  # a and b are not pooled into one family


def test_model_missing_from_registry_is_its_own_family(tmp_path: Path) -> None:
    records = ingest([VALID]).records
    cells = build_cells(records, None)
    fam = dict(cells.select("model", "family").unique().iter_rows())
    assert fam == {m: OWN_FAMILY.format(m) for m in fam}
    assert json.dumps(sorted(fam.values()))  # plain strings


def test_import_neutralises_formula_names_in_registry_csv(tmp_path: Path) -> None:
    """A model named like a spreadsheet formula: inert in registry.csv, intact when read."""
    import shutil

    fix = Path(__file__).parents[1] / "fixtures" / "importers"
    src = tmp_path / "logs"
    shutil.copytree(fix / "single", src)
    (results,) = src.rglob("results_*.json")
    data = json.loads(results.read_text())
    name = '=HYPERLINK("http://x","y")'
    data["model_name"] = name
    results.write_text(json.dumps(data))
    out = tmp_path / "imp"
    assert main(["import", "lmeval", str(src), "--mapping", str(fix / "single.toml"),
                 "--out", str(out)]) == 0
    raw = (out / "registry.csv").read_text()
    assert "'=HYPERLINK" in raw
    assert not any(line.startswith("=") for line in raw.splitlines())
    models = pl.read_parquet(out / "records.parquet").get_column("model").unique().to_list()
    assert models == [name]
    assert load_registry(out / "registry.csv").get_column("model").to_list() == [name]


def test_every_file_in_a_folder_is_read_or_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """gzip logs are read; everything else is named in ingest.json with why it is not."""
    import gzip

    logs = tmp_path / "logs"
    (logs / "real").mkdir(parents=True)
    row = '{{"model": "m{0}", "task": "t", "item_id": "q", "prediction": true, "outcome": true}}\n'
    (logs / "a.jsonl").write_text(row.format(1))
    with gzip.open(logs / "b.jsonl.gz", "wt") as fh:
        fh.write(row.format(2) + row.format(3))
    with gzip.open(logs / "c.csv.gz", "wt") as fh:
        fh.write("model,task,item_id,prediction,outcome\nm4,t,q,yes,no\n")
    (logs / "notes.tsv").write_text("x\ty\n")
    (logs / "meta.json").write_text("{}")
    (logs / ".hidden.jsonl").write_text(row.format(9))
    (logs / "real" / "d.jsonl").write_text(row.format(5))
    (logs / "linked").symlink_to(logs / "real", target_is_directory=True)
    (logs / "real" / "loop").symlink_to(logs, target_is_directory=True)
    (logs / "dangling.jsonl").symlink_to(logs / "nowhere.jsonl")
    out = tmp_path / "out"
    assert main(["ingest", str(logs), "--out", str(out)]) == 0
    assert "Traceback" not in capsys.readouterr().err
    s = json.loads((out / "ingest.json").read_text())
    assert s["records_read"] == s["records_used"] + s["records_quarantined"] + s["records_duplicate"]
    assert s["models"] == ["m1", "m2", "m3", "m4", "m5"]
    rows = {Path(f["path"]).name: f["rows"] for f in s["files"]}
    assert rows == {"a.jsonl": 1, "b.jsonl.gz": 2, "c.csv.gz": 1, "d.jsonl": 1}
    reasons = {Path(e["path"]).name: e["reason"] for e in s["files_not_read"]}
    assert reasons[".hidden.jsonl"] == "hidden"
    assert reasons["notes.tsv"] == "unsupported type '.tsv'"
    assert reasons["meta.json"] == "unsupported type '.json'"
    assert reasons["dangling.jsonl"] == "dangling link"
    # real/ and linked/ are one folder: read once, the other way in is listed
    assert any(r.startswith("link loop") for r in reasons.values())
    assert len(s["files_not_read"]) == 6


def test_a_corrupt_gzip_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "x.jsonl.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage")
    assert main(["ingest", str(bad), "--out", str(tmp_path / "o")]) == 2
    _one_line_error(capsys, "x.jsonl.gz", "gzip")


def test_parquet_uint64_sample_beyond_int64_is_quarantined(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.parquet"
    pl.DataFrame({
        "model": ["m", "m"], "task": ["t", "t"], "item_id": ["a", "b"],
        "prediction": ["yes", "no"], "outcome": ["yes", "yes"],
        "sample": pl.Series([1, 2**64 - 1], dtype=pl.UInt64),
    }).write_parquet(path)
    out = tmp_path / "out"
    assert main(["ingest", str(path), "--out", str(out)]) == 0
    assert "Traceback" not in capsys.readouterr().err
    s = json.loads((out / "ingest.json").read_text())
    assert (s["records_read"], s["records_used"], s["records_quarantined"]) == (2, 1, 1)
    assert s["records_read"] == s["records_used"] + s["records_quarantined"] + s["records_duplicate"]
    q = pl.read_parquet(out / "quarantine.parquet")
    assert q.get_column("reason").to_list() == [
        "invalid sample '18446744073709551615' (must be a non-negative integer)"]


def test_inputs_inside_the_checkout_from_another_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An editable install's checkout is the package's parent folder: its files (data_raw/,
    these tests' corpus) read from elsewhere were named relative to the checkout and then
    opened relative to the working directory ("no such file or folder")."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    folder = tmp_path / "inputs"  # a folder, so the files are found by walking it
    folder.mkdir()
    assert main(["ingest", str(VALID.resolve()), "--out", "a"]) == 0
    (folder / "valid.jsonl").write_bytes(VALID.read_bytes())
    assert main(["ingest", str(folder), "--out", "b"]) == 0
    for out in ("a", "b"):
        summary = json.loads((elsewhere / out / "ingest.json").read_text())
        assert summary["records_used"] > 0
    data_raw = Path(__file__).resolve().parents[2] / "data_raw"
    if data_raw.is_dir():  # the checkout's default data, as `make report` uses it
        assert main(["ingest", str(data_raw), "--out", "c"]) == 0
