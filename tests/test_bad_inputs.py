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
    monkeypatch.chdir(case.get("folder", CORPUS))
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
    _check_case(case, monkeypatch)


def _check_case(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
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
    _check_case_through_the_cli(case, tmp_path, monkeypatch, capsys)


def _check_case_through_the_cli(
    case: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(case.get("folder", CORPUS))
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


# --------------------------------------------------------------------------- generated cases
# Hostile files too big or too odd to keep in git (issue 30) are written into tmp_path by a
# writer; the case (same keys as cases.toml) is then checked exactly like a corpus case,
# directly and through the CLI.

GOOD = '{{"model": "m1", "task": "refusal", "item_id": "q{i}", "prediction": true, "outcome": true}}'


def _jsonl_with(bad_line: str, *, before: int = 1, after: int = 1) -> str:
    """Good lines, the bad one, good lines (the bad one is line ``before + 1``)."""
    lines = [GOOD.format(i=i) for i in range(before)] + [bad_line]
    lines += [GOOD.format(i=before + 1 + i) for i in range(after)]
    return "\n".join(lines) + "\n"


def _row(**fields: str) -> str:
    """One record line with ``fields`` written as raw JSON text (not quoted)."""
    base = {"model": '"m1"', "task": '"refusal"', "item_id": '"qx"', "prediction": "true",
            "outcome": "true"}
    return "{" + ", ".join(f'"{k}": {v}' for k, v in {**base, **fields}.items()) + "}"


def _arrays(depth: int) -> str:
    return "[" * depth + "]" * depth


def _objects(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


GENERATED: dict[str, tuple[dict[str, str], dict[str, Any]]] = {
    # class 2: nesting deeper than Python reads, numbers longer than it converts
    "deep_array_in_extra_column_5000": (
        {"deep.jsonl": _jsonl_with(_row(extra=_arrays(5000)))},
        {"reasons": ["invalid JSON (nested too deeply"], "lines": ["deep.jsonl:2"]}),
    "deep_array_in_extra_column_100000": (
        {"deep.jsonl": _jsonl_with(_row(extra=_arrays(100_000)))},
        {"reasons": ["invalid JSON (nested too deeply"], "lines": ["deep.jsonl:2"]}),
    "deep_object_in_model": (
        {"deep.jsonl": _jsonl_with(_row(model=_objects(20_000)))},
        {"reasons": ["invalid JSON (nested too deeply"], "lines": ["deep.jsonl:2"]}),
    "deep_array_in_a_long_file": (  # more than 64 lines: found by bisecting chunks
        {"deep.jsonl": _jsonl_with(_row(item_id=_arrays(50_000)), before=100, after=100)},
        {"reasons": ["invalid JSON (nested too deeply"], "lines": ["deep.jsonl:101"],
         "read": 201, "used": 200}),
    "integer_of_5000_digits_in_confidence": (
        {"big.jsonl": _jsonl_with(_row(confidence="9" * 5000))},
        {"reasons": ["an integer of more than 4300 digits"], "lines": ["big.jsonl:2"]}),
    "integer_of_5000_digits_in_item_id": (
        {"big.jsonl": _jsonl_with(_row(item_id="-" + "1" * 5000), before=80)},
        {"reasons": ["an integer of more than 4300 digits"], "lines": ["big.jsonl:81"],
         "read": 82, "used": 81}),
    "deep_registry_toml": (
        {"r.jsonl": _jsonl_with(_row()),
         "reg.toml": '[[model]]\nmodel = "m1"\nfamily = ' + _arrays(50_000) + "\n"},
        {"expect": "exit2", "registry": "reg.toml",
         "message": "reg.toml: invalid TOML (nested too deeply, over about 1,000 levels (at "
                    "line 3))"}),
    "deep_config_toml": (
        {"r.jsonl": _jsonl_with(_row()),
         "cfg.toml": 'tasks = ["refusal"]\n[defaults]\ntask = ' + _arrays(50_000) + "\n"},
        {"expect": "exit2", "config": "cfg.toml", "message": "nested too deeply"}),
    "deep_inline_tables_in_config": (
        {"r.jsonl": _jsonl_with(_row()), "cfg.toml": "x = " + "{a = " * 50_000 + "1" + "}" * 50_000},
        {"expect": "exit2", "config": "cfg.toml", "message": "(at line 1)"}),
}


def _generated_case(name: str, folder: Path) -> dict[str, Any]:
    files, case = GENERATED[name]
    for file_name, text in files.items():
        (folder / file_name).write_text(text, encoding="utf-8")
    data = [f for f in files if f.endswith((".jsonl", ".csv"))]
    if case.get("expect") == "exit2":
        return {"name": name, "files": data, "folder": folder, **case}
    return {"name": name, "files": data, "folder": folder, "expect": "quarantine",
            "read": 3, "used": 2, "quarantined": 1, "duplicate": 0,
            **{k: v for k, v in case.items() if k not in ("read", "used")},
            **({"read": case["read"], "used": case["used"]} if "read" in case else {})}


@pytest.mark.parametrize("name", list(GENERATED))
def test_generated_case(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _check_case(_generated_case(name, tmp_path), monkeypatch)


@pytest.mark.parametrize("name", list(GENERATED))
def test_generated_case_through_the_cli(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    _check_case_through_the_cli(_generated_case(name, folder), tmp_path, monkeypatch, capsys)


def test_lmeval_sample_with_a_deep_doc_is_skipped_with_its_line(tmp_path: Path) -> None:
    from selfmodel.importers.lmeval import import_lmeval
    from selfmodel.importers.mapping import parse_mapping

    folder = tmp_path / "org__model-x"
    folder.mkdir()
    good = {"doc_id": 0, "doc": {"id": "q"}, "target": "A", "filtered_resps": ["A"]}
    deep = '{"doc_id": 1, "doc": ' + _objects(50_000) + ', "target": "A"}'
    big = '{"doc_id": 2, "doc": {"id": ' + "7" * 5000 + '}, "target": "A"}'
    path = folder / "samples_t_2025-02-02T01-02-03.5.jsonl"
    path.write_text("\n".join([json.dumps(good), deep, big]) + "\n", encoding="utf-8")
    mapping = parse_mapping({"format": "lmeval", "task": "refusal", "fields": {
        "item_id": "doc.id", "prediction": "filtered_resps.0", "outcome": "target"}})
    res = import_lmeval(path, mapping=mapping)
    assert res.records.height == 1
    assert any("not valid JSON" in n and "[2, 3]" in n for n in res.notes), res.notes


@pytest.mark.parametrize("where", ["fields", "top"])
def test_deep_mapping_toml_is_one_line_with_its_line(where: str, tmp_path: Path) -> None:
    from selfmodel.importers.mapping import load_mapping

    path = tmp_path / "m.toml"
    deep = _arrays(50_000)
    path.write_text('format = "lmeval"\n' + (f"x = {deep}\n" if where == "top" else
                                              f"[fields]\nitem_id = {deep}\n"))
    with pytest.raises(InputError) as info:
        load_mapping(path)
    line = 2 if where == "top" else 3
    assert f"nested too deeply, over about 1,000 levels (at line {line})" in str(info.value)
    assert "\n" not in str(info.value)
