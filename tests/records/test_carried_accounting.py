"""The accounting travels with the records (issue 53): a run on ingested records counts what ingest left out.

``selfmodel ingest logs --out A`` keeps the good rows in ``A/records.parquet`` and writes the
accounting, with the SHA-256 of that file, to ``A/ingest.json``. ``selfmodel run
A/records.parquet`` then reports the rows quarantined at that ingest (before issue 53 it said
"quarantined 0" after 241 were quarantined), the same number in ``ingest.json``,
``results.json`` and the report; a run over several ingests adds them up; a changed
``records.parquet`` is not described by its old ``ingest.json`` and nothing is carried.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from selfmodel.cli import main
from selfmodel.decisions.status import status_lines
from selfmodel.records.ingest import ingest
from selfmodel.report.sections import data as data_sec
from selfmodel.report.sections.common import Report

COUNTS = ("records_read", "records_used", "records_quarantined", "records_duplicate",
          "records_excluded")


def raw_logs(folder: Path, *, models: tuple[str, ...], bad: int, dup: int, items: int = 30) -> Path:
    """A JSONL log of ``models`` x ``items`` with ``bad`` broken lines and ``dup`` exact copies."""
    lines = []
    for m in models:
        for i in range(items):
            lines.append(json.dumps({"model": m, "task": "t", "item_id": str(i),
                                     "prediction": i % 2 == 0, "outcome": i % 3 != 0}))
    lines += lines[:dup]
    lines += ['{"model": "m1", "task": "t"'] * bad  # invalid JSON
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "logs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _ingested(tmp_path: Path, name: str, **kw) -> Path:
    out = tmp_path / name
    assert main(["ingest", str(raw_logs(tmp_path / f"raw_{name}", **kw)), "--out", str(out)]) == 0
    return out


def test_ingest_json_names_the_records_file_it_describes(tmp_path: Path) -> None:
    out = _ingested(tmp_path, "a", models=("m1", "m2"), bad=7, dup=3)
    s = json.loads((out / "ingest.json").read_text())
    assert s["records_quarantined"] == 7 and s["records_duplicate"] == 3
    import hashlib
    assert s["records_sha256"] == hashlib.sha256((out / "records.parquet").read_bytes()).hexdigest()


def test_a_run_on_ingested_records_carries_their_quarantine(tmp_path: Path) -> None:
    a = _ingested(tmp_path, "a", models=("m1", "m2"), bad=7, dup=3)
    first = json.loads((a / "ingest.json").read_text())
    s = ingest([a / "records.parquet"]).summary
    assert {k: s[k] for k in COUNTS} == {k: first[k] for k in COUNTS}
    assert s["quarantine_reasons"] == first["quarantine_reasons"] == {"invalid JSON": 7}
    assert [c["path"] for c in s["carried"]] == [f"{a.as_posix()}/records.parquet"]
    assert s["carried_not_trusted"] == []
    assert s["records_read"] == (s["records_used"] + s["records_quarantined"]
                                 + s["records_duplicate"] + s["records_excluded"])
    (line,) = [x["text"] for x in status_lines({"data": s}) if x["key"] == "carried"]
    assert "quarantined 7" in line


def test_a_run_over_several_ingests_adds_them_up(tmp_path: Path) -> None:
    a = _ingested(tmp_path, "a", models=("m1", "m2"), bad=7, dup=3)
    b = _ingested(tmp_path, "b", models=("m3",), bad=2, dup=0)
    both = ingest([a / "records.parquet", b / "records.parquet"]).summary
    firsts = [json.loads((d / "ingest.json").read_text()) for d in (a, b)]
    for k in COUNTS:
        assert both[k] == sum(f[k] for f in firsts), k
    assert both["quarantine_reasons"] == {"invalid JSON": 9}
    assert len(both["carried"]) == 2


def test_a_changed_records_file_is_not_described_by_its_old_accounting(tmp_path: Path) -> None:
    a = _ingested(tmp_path, "a", models=("m1", "m2"), bad=7, dup=3)
    records = pl.read_parquet(a / "records.parquet")
    records.head(records.height - 5).write_parquet(a / "records.parquet")  # edited by hand
    s = ingest([a / "records.parquet"]).summary
    assert s["carried"] == [] and s["records_quarantined"] == 0
    assert s["records_read"] == records.height - 5
    (bad,) = s["carried_not_trusted"]
    assert "describes another records.parquet" in bad["reason"]
    assert any(x["key"] == "carried_not_trusted" for x in status_lines({"data": s}))


def test_the_run_reports_the_same_quarantine_in_ingest_json_results_and_report(
        tmp_path: Path, fake_nutpie: dict[str, int]) -> None:
    """``selfmodel run`` on an ingested records.parquet: one count in all three places."""
    a = _ingested(tmp_path, "a", models=("m1", "m2", "m3"), bad=11, dup=2)
    first = json.loads((a / "ingest.json").read_text())
    out = tmp_path / "run"
    assert main(["run", str(a / "records.parquet"), "--out", str(out), "--no-report",
                 "--no-power", "--no-robustness", "--models", "scale", "--jobs", "1",
                 "--draws", "50", "--tune", "50", "--chains", "2", "--quiet"]) == 0
    results = json.loads((out / "results.json").read_text())
    again = json.loads((out / "ingest.json").read_text())
    for k in COUNTS[:-1]:
        assert results["data"][k] == again[k] == first[k], k
    assert results["data"]["records_quarantined"] == 11
    text = data_sec.accounting(Report(results, {}, None, out, 6.3, 8.5))
    assert "quarantined **11**" in text and "read **103**" in text
    assert any(s["key"] == "carried" for s in results["status"])


@pytest.mark.parametrize("content", ["{", "[]", '{"records_sha256": null}', "SHA_WITH_BAD_REASONS"])
def test_an_unreadable_or_foreign_ingest_json_is_not_trusted(tmp_path: Path, content: str) -> None:
    a = _ingested(tmp_path, "a", models=("m1",), bad=1, dup=0)
    if content == "SHA_WITH_BAD_REASONS":  # the right file, but a reason count that is text
        summary = json.loads((a / "ingest.json").read_text())
        content = json.dumps({**summary, "quarantine_reasons": {"invalid JSON": "one"}})
    (a / "ingest.json").write_text(content)
    s = ingest([a / "records.parquet"]).summary
    assert s["carried"] == [] and len(s["carried_not_trusted"]) == 1
