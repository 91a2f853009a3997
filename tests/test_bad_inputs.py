"""Bad-input corpus: every case in ``tests/bad_inputs/cases.toml`` behaves as declared.

Each case either raises :class:`InputError` with a one-line message (the CLI turns it into
exit 2) or ingests with the declared quarantine reasons and counts. Whatever happens,
``records_read == records_used + records_quarantined + records_duplicate``.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from selfmodel.cli import main
from selfmodel.contract import QUARANTINE_SCHEMA, RECORD_SCHEMA, InputError
from selfmodel.ingest import ingest, parse_map_options

CORPUS = Path(__file__).parent / "bad_inputs"
CASES: list[dict[str, Any]] = tomllib.loads((CORPUS / "cases.toml").read_text("utf-8"))["case"]


def _run(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch):
    # Run from inside the corpus so that messages and source_file use the short names.
    monkeypatch.chdir(CORPUS)
    return ingest(
        case["files"],
        mapping=parse_map_options(case.get("map", [])) or None,
        config=case.get("config"),
        registry=case.get("registry"),
    )


def test_case_names_are_unique_and_files_exist() -> None:
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names))
    for case in CASES:
        assert case["expect"] in ("exit2", "quarantine"), case["name"]
        for key in ("registry", "config"):
            if key in case:
                assert (CORPUS / case[key]).exists(), (case["name"], case[key])
        if case["name"] != "missing_path":
            for f in case["files"]:
                assert (CORPUS / f).exists(), (case["name"], f)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_bad_input_case(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    if case["expect"] == "exit2":
        with pytest.raises(InputError) as info:
            _run(case, monkeypatch)
        message = str(info.value)
        assert "\n" not in message and "\r" not in message
        assert case["message"] in message
        assert message.rstrip().endswith((".", "?"))
        return

    result = _run(case, monkeypatch)
    s = result.summary
    assert (
        s["records_read"] == s["records_used"] + s["records_quarantined"] + s["records_duplicate"]
    )
    assert (
        s["records_read"],
        s["records_used"],
        s["records_quarantined"],
        s["records_duplicate"],
    ) == (
        case["read"],
        case["used"],
        case["quarantined"],
        case["duplicate"],
    )
    assert result.records.height == s["records_used"]
    assert result.quarantine.height == s["records_quarantined"]
    assert dict(result.records.schema) == RECORD_SCHEMA
    assert dict(result.quarantine.schema) == QUARANTINE_SCHEMA

    reasons = result.quarantine.get_column("reason").to_list()
    for expected in case["reasons"]:
        assert any(expected in r for r in reasons), (expected, reasons)
    for reason in reasons:
        assert any(expected in reason for expected in case["reasons"]), reason
    assert all(r is not None and len(r) <= 500 for r in result.quarantine.get_column("raw"))

    if "lines" in case:
        got = sorted(
            f"{f}:{n}" for f, n in result.quarantine.select("source_file", "source_line").rows()
        )
        assert got == sorted(case["lines"])
    if "unreadable" in case:
        assert s["unreadable_predictions"] == case["unreadable"]
    if "file_rows" in case:
        assert {f["path"]: f["rows"] for f in s["files"]} == case["file_rows"]
    if "values" in case:
        cells = set(
            result.records.select(pl.col(pl.Utf8))
            .unpivot()
            .get_column("value")
            .drop_nulls()
            .to_list()
        )
        for value in case["values"]:
            assert value in cells, value


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_bad_input_case_through_the_cli(
    case: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The same case through ``selfmodel ingest``: exit status, one line, ``ingest.json``."""
    monkeypatch.chdir(CORPUS)
    out = tmp_path / "out"
    argv = ["ingest", *case["files"], "--out", str(out)]
    argv += [a for m in case.get("map", []) for a in ("--map", m)]
    argv += ["--config", case["config"]] if "config" in case else []
    argv += ["--registry", case["registry"]] if "registry" in case else []
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if case["expect"] == "exit2":
        errors = [line for line in err.splitlines() if line.startswith("selfmodel: error:")]
        assert code == 2 and len(errors) == 1, err
        assert case.get("cli_message", case["message"]) in errors[0]
        assert not out.exists()  # nothing written, not even an empty folder
        return
    assert code == 0, err
    s = json.loads((out / "ingest.json").read_text())
    assert s["records_read"] == s["records_used"] + s["records_quarantined"] + s["records_duplicate"]
    assert (s["records_read"], s["records_used"], s["records_quarantined"],
            s["records_duplicate"]) == (case["read"], case["used"], case["quarantined"],
                                        case["duplicate"])
    quarantine = pl.read_parquet(out / "quarantine.parquet")
    assert quarantine.height == s["records_quarantined"]
    for expected in case["reasons"]:
        assert any(expected in r for r in quarantine.get_column("reason").to_list()), expected
    assert pl.read_parquet(out / "records.parquet").height == s["records_used"]
