"""Property tests: for any mix of valid, invalid and duplicated rows, ingestion accounts for
every row exactly and passes valid rows through unchanged (JSONL and CSV)."""

from __future__ import annotations

import csv
import json
import math
import re
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selfmodel.records.contract import parse_bool
from selfmodel.records.ingest import ingest

COLUMNS = ["model", "task", "item_id", "prediction", "outcome", "confidence", "sample", "status"]

# Text that survives stripping: no leading/trailing white space, may hold markup, quotes,
# commas, formula starts, non-ASCII and inner newlines.
_ALPHABET = st.sampled_from(list("abcXYZ019 ,;\"'<>=|!@#*_[](){}$\\/\néü中"))
_OBJECT_START = re.compile(r'^\{\s*["}]')


def _looks_nested(t: str) -> bool:
    """Text written like a list or a JSON object: not one value, quarantined (tested below)."""
    return (t.startswith("[") and t.endswith("]")) or (
        t.endswith("}") and _OBJECT_START.search(t) is not None)


TEXT = (st.text(_ALPHABET, min_size=1, max_size=12).map(str.strip)
        .filter(lambda t: bool(t) and not _looks_nested(t)))
BOOLISH = st.sampled_from(["yes", "No", "TRUE", "false", "1", "0", "y", "F", True, False])
ANSWER = st.one_of(BOOLISH, TEXT)

VALID = st.fixed_dictionaries(
    {
        "model": st.sampled_from(["m1", "gpt-4o", "llama 3 70B"]),
        "task": st.sampled_from(["refusal", "difficulty", "word_association"]),
        "prediction": ANSWER,
        "outcome": ANSWER,
        "confidence": st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.0)),
        "sample": st.one_of(st.none(), st.integers(min_value=0, max_value=5)),
        "status": st.sampled_from([None, "ok"]),
    }
)

INVALID_KINDS = [
    "missing_model",
    "confidence_high",
    "confidence_inf",
    "confidence_text",
    "bad_status",
    "no_outcome",
    "negative_sample",
    "correct_disagrees",
    "nested_value",
    "broken_line",
]


def _canonical(value: Any) -> str:
    parsed = parse_bool(value)
    if parsed is not None:
        return "true" if parsed else "false"
    return str(value)


def _invalid_row(kind: str, index: int) -> dict[str, Any] | None:
    row: dict[str, Any] = {
        "model": "m1",
        "task": "refusal",
        "item_id": f"bad-{index}",
        "prediction": "yes",
        "outcome": "no",
    }
    if kind == "missing_model":
        row["model"] = "  "
    elif kind == "confidence_high":
        row["confidence"] = 1.5
    elif kind == "confidence_inf":
        row["confidence"] = "inf"  # (NaN is a missing confidence, not an invalid one)
    elif kind == "confidence_text":
        row["confidence"] = "very sure"
    elif kind == "bad_status":
        row["status"] = "crashed"
    elif kind == "no_outcome":
        row["outcome"] = None
    elif kind == "negative_sample":
        row["sample"] = -2
    elif kind == "correct_disagrees":
        row["correct"] = True
    elif kind == "nested_value":
        row["outcome"] = "[]"
    elif kind == "broken_line":
        return None
    return row


ROWS = st.tuples(
    st.lists(VALID, max_size=25),
    st.lists(st.sampled_from(INVALID_KINDS), max_size=10),
    st.lists(st.integers(min_value=0, max_value=1000), max_size=5),
    st.randoms(use_true_random=False),
)


def _write_jsonl(path: Path, rows: list[dict[str, Any] | None]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            if row is None:
                fh.write('{"model": "m1", "task": "refusal", "item_id": \n')  # truncated
            else:
                fh.write(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n")


def _write_csv(path: Path, rows: list[dict[str, Any] | None]) -> None:
    header = [*COLUMNS, "correct"]
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for row in rows:
            if row is None:
                writer.writerow(["m1", "refusal", "x", "yes", "no", "", "", "", "", "extra"])
            else:
                writer.writerow(["" if row.get(c) is None else _csv_cell(row[c]) for c in header])


def _csv_cell(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(ROWS)
def test_accounting_exact_and_valid_rows_unchanged(data: tuple) -> None:
    valid, invalid_kinds, dup_picks, rnd = data
    valid = [dict(v, item_id=f"item-{i}") for i, v in enumerate(valid)]
    duplicates = [dict(valid[p % len(valid)]) for p in dup_picks] if valid else []
    invalid = [_invalid_row(kind, i) for i, kind in enumerate(invalid_kinds)]
    rows: list[dict[str, Any] | None] = [*valid, *duplicates, *invalid]
    rnd.shuffle(rows)

    # In a task whose outcomes are all booleans, a non-boolean prediction is unreadable.
    binary_tasks = {v["task"] for v in valid} - {
        v["task"] for v in valid if _canonical(v["outcome"]) not in ("true", "false")
    }

    def unreadable(v: dict[str, Any]) -> bool:
        return v["task"] in binary_tasks and _canonical(v["prediction"]) not in ("true", "false")

    expected = {
        (
            v["model"],
            v["task"],
            v["item_id"],
            _canonical(v["prediction"]),
            _canonical(v["outcome"]),
            None if unreadable(v) else _canonical(v["prediction"]) == _canonical(v["outcome"]),
            v["confidence"],
            v["sample"] or 0,
            "unparsed" if unreadable(v) else "ok",
        )
        for v in valid
    }
    with tempfile.TemporaryDirectory() as tmp:
        for writer, name in ((_write_jsonl, "rows.jsonl"), (_write_csv, "rows.csv")):
            path = Path(tmp) / name
            writer(path, rows)
            if not valid:
                continue  # nothing usable: ingest raises InputError (tested elsewhere)
            result = ingest([path])
            s = result.summary
            assert (
                s["records_read"]
                == s["records_used"] + s["records_quarantined"] + s["records_duplicate"]
            )
            assert s["records_read"] == len(rows)
            assert s["records_used"] == len(valid)
            assert s["records_quarantined"] == len(invalid)
            assert s["records_duplicate"] == len(duplicates)
            got = {
                (
                    r["model"],
                    r["task"],
                    r["item_id"],
                    r["prediction"],
                    r["outcome"],
                    r["correct"],
                    r["confidence"],
                    r["sample"],
                    r["status"],
                )
                for r in result.records.iter_rows(named=True)
            }
            assert got == expected, name
            assert all(
                c is None or (math.isfinite(c) and 0 <= c <= 1)
                for c in result.records.get_column("confidence")
            )
