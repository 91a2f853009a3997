"""The validation studies' record files (validation/jsonl_records.py): resumable after a kill.

Every study appends one JSON line per data set. Before this module two studies (contrast,
confidence calibration) raised on a torn line when resumed, and every study glued its next
record to the torn line, losing both.
"""

from __future__ import annotations

import doctest
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "validation"))
import jsonl_records  # noqa: E402


def test_doctests() -> None:
    assert doctest.testmod(jsonl_records).failed == 0


def test_missing_file_has_no_records(tmp_path: Path) -> None:
    assert jsonl_records.read(tmp_path / "none.jsonl") == []


def test_torn_lines_are_skipped_and_the_next_record_is_kept(tmp_path: Path, capsys) -> None:
    p = tmp_path / "r.jsonl"
    jsonl_records.append(p, {"seed": 1, "b": 2, "a": 1})
    p.write_text(p.read_text() + '{"seed": 2, "a"')  # killed mid-write
    jsonl_records.append(p, {"seed": 3})
    p.write_text(p.read_text() + "\n[1, 2]\n")  # not a record
    assert [r["seed"] for r in jsonl_records.read(p)] == [1, 3]
    said = capsys.readouterr().err.splitlines()
    assert [line.split(": ")[0] for line in said] == [f"{p}:2", f"{p}:5"]  # each skip is said
    lines = p.read_text().splitlines()
    assert lines[0] == json.dumps({"a": 1, "b": 2, "seed": 1})  # sorted keys by default
    jsonl_records.append(p, {"seed": 4, "a": 0}, sort_keys=False)
    assert p.read_text().splitlines()[-1] == json.dumps({"seed": 4, "a": 0})


def test_every_study_resumes_through_the_module() -> None:
    """No study script reads or appends its .jsonl by hand any more."""
    folder = Path(jsonl_records.__file__).parent
    studies = ["pipeline_operating_characteristics", "training_null", "training_study", "contrast_study",
               "confidence_calibration_study", "self_vs_other_study"]
    for name in studies:
        text = (folder / f"{name}.py").read_text()
        assert "jsonl_records.read(" in text and "jsonl_records.append(" in text, name
        assert '.open("a")' not in text, name
