"""Bad-input corpus: every case in ``tests/bad_inputs/cases.toml`` behaves as declared.

Each case either raises :class:`InputError` with a one-line message (the CLI turns it into
exit 2) or ingests with the declared quarantine reasons and counts. Whatever happens,
``records_read == records_used + records_quarantined + records_duplicate``.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from selfmodel.cli import main
from selfmodel.records.contract import QUARANTINE_SCHEMA, RECORD_SCHEMA, InputError
from selfmodel.records.ingest import ingest, parse_map_options

CORPUS = Path(__file__).parents[1] / "bad_inputs"
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


HEADER = "model,task,item_id,prediction,outcome"
CSV_ROWS = "m1,refusal,q1,true,true\nm1,refusal,q2,false,true\n"


def _defaults(line: str) -> tuple[dict[str, str | bytes], dict[str, Any]]:
    return ({"r.jsonl": _jsonl_with(_row()), "cfg.toml": f"[defaults]\n{line}\n"},
            {"expect": "exit2", "config": "cfg.toml",
             "message": f"cfg.toml: line 2, column '{line.split()[0]}': the default"})


GENERATED: dict[str, tuple[dict[str, str | bytes], dict[str, Any]]] = {
    # class 6: encodings and separators that are not UTF-8 CSV: one line saying which
    "utf16_csv_with_bom": (
        {"u.csv": f"{HEADER}\n{CSV_ROWS}".encode("utf-16")},
        {"expect": "exit2", "message": "u.csv: line 1: the file is UTF-16, not UTF-8. Save it as "
                                       "UTF-8 (e.g. iconv -f UTF-16"}),
    "utf16_be_jsonl_with_bom": (
        {"u.jsonl": "\ufeff".encode("utf-16-be") + _jsonl_with(_row()).encode("utf-16-be")},
        {"expect": "exit2", "message": "u.jsonl: line 1: the file is UTF-16, not UTF-8"}),
    "utf16_le_csv_without_bom": (
        {"u.csv": f"{HEADER}\n{CSV_ROWS}".encode("utf-16-le")},
        {"expect": "exit2", "message": "the file is UTF-16 or UTF-32, not UTF-8"}),
    "utf32_jsonl": (
        {"u.jsonl": _jsonl_with(_row()).encode("utf-32")},
        {"expect": "exit2", "message": "the file is UTF-32, not UTF-8"}),
    "semicolon_separated_csv": (
        {"s.csv": f"{HEADER}\n{CSV_ROWS}".replace(",", ";")},
        {"expect": "exit2", "message": "s.csv: line 1: the header is one column holding "
                                       "semicolons ('model;task;item_id;prediction;outcome'): "
                                       "the file is separated by semicolons, not commas"}),
    "tab_separated_csv": (
        {"s.csv": f"{HEADER}\n{CSV_ROWS}".replace(",", "\t")},
        {"expect": "exit2", "message": "the file is separated by tabs, not commas"}),
    "bar_separated_csv": (
        {"s.csv": f"{HEADER}\n{CSV_ROWS}".replace(",", "|")},
        {"expect": "exit2", "message": "separated by vertical bars"}),
    "one_column_csv_with_a_semicolon_in_its_name_is_still_read_as_csv": (
        {"s.csv": "model;x,task,item_id,prediction,outcome\n" + CSV_ROWS},
        {"expect": "exit2", "message": "required column 'model' is missing"}),
    # class 6: a [defaults] value that no record rule accepts is refused at its line
    "defaults_correct_not_boolean": _defaults('correct = "perhaps"'),
    "defaults_confidence_out_of_range": _defaults("confidence = 7"),
    "defaults_confidence_nan": _defaults("confidence = nan"),
    "defaults_sample_negative": _defaults("sample = -1"),
    "defaults_sample_arabic_digit": _defaults('sample = "\u0663"'),
    "defaults_status_unknown": _defaults('status = "maybe"'),
    "defaults_task_blank": _defaults('task = "  "'),
    "defaults_model_missing_spelling": _defaults('model = "None"'),
    "defaults_model_with_a_nul": _defaults('model = "m\\u00001"'),
    "defaults_cluster_zero_width_space": _defaults('cluster = "\\u200b"'),
    # class 6: a bare NaN is a missing value in a text column (prediction: unreadable) and
    # no number in a numeric one (confidence, sample: quarantined, never read as missing)
    "bare_nan_prediction_jsonl": (
        {"n.jsonl": _jsonl_with(_row(prediction="NaN"))},
        {"reasons": [], "quarantined": 0, "used": 3, "unreadable": 1}),
    "bare_nan_confidence_jsonl": (
        {"n.jsonl": _jsonl_with(_row(prediction="NaN", confidence="NaN"))},
        {"reasons": ["invalid confidence 'nan' (not a finite number"], "lines": ["n.jsonl:2"]}),
    "nan_prediction_csv": (
        {"n.csv": f"{HEADER},confidence\nm1,refusal,q1,NaN,true,\nm1,refusal,q2,nan,true,\n"
                  "m1,refusal,q3,true,true,0.5\n"},
        {"reasons": [], "quarantined": 0, "used": 3, "unreadable": 2}),
    "nan_confidence_csv": (
        {"n.csv": f"{HEADER},confidence\nm1,refusal,q1,NaN,true,nan\nm1,refusal,q2,nan,true,\n"
                  "m1,refusal,q3,true,true,NAN\n"},
        {"reasons": ["invalid confidence 'nan' (not a finite", "invalid confidence 'NAN' (not a"],
         "quarantined": 2, "used": 1, "lines": ["n.csv:2", "n.csv:4"]}),

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
         "message": "reg.toml: invalid TOML (nested too deeply, over 256 levels (at "
                    "line 3))"}),
    "deep_config_toml": (
        {"r.jsonl": _jsonl_with(_row()),
         "cfg.toml": 'tasks = ["refusal"]\n[defaults]\ntask = ' + _arrays(50_000) + "\n"},
        {"expect": "exit2", "config": "cfg.toml", "message": "nested too deeply"}),
    # class 4: look-alike model names, one rule (name_key): two spellings of one name are
    # an error showing both, in the registry, in the records, and between the two
    "registry_names_differ_by_a_zero_width_space": (
        {"r.jsonl": _jsonl_with(_row()), "reg.csv": "model,params_b\nm1,70\nm\u200b1,8\n"},
        {"expect": "exit2", "registry": "reg.csv",
         "message": "reg.csv: line 3, column 'model': duplicate model 'm1' (first on line 2 as "
                    "'m1', here 'm\\u200b1': the same name once invisible characters"}),
    "registry_names_differ_by_normal_form": (
        {"r.jsonl": _jsonl_with(_row()),
         "reg.csv": "model,params_b\nQw\u00e9n,70\nm1,8\nQwe\u0301n,8\n"},
        {"expect": "exit2", "registry": "reg.csv",
         "message": "line 4, column 'model': duplicate model 'Qw\u00e9n' (first on line 2 as "
                    "'Qw\\xe9n', here 'Qwe\\u0301n'"}),
    "registry_names_differ_by_inner_white_space": (
        {"r.jsonl": _jsonl_with(_row()), "reg.csv": "model,params_b\ngpt 4,70\ngpt\t4,8\n"},
        {"expect": "exit2", "registry": "reg.csv", "message": "here 'gpt\\t4'"}),
    "registry_toml_names_differ_by_a_word_joiner": (
        {"r.jsonl": _jsonl_with(_row()),
         "reg.toml": '[[model]]\nmodel = "m1"\n[[model]]\nmodel = "m1\u2060"\n'},
        {"expect": "exit2", "registry": "reg.toml",
         "message": "reg.toml: line 4, column 'model': duplicate model 'm1'"}),
    "records_and_registry_spell_a_model_differently": (
        {"r.jsonl": _jsonl_with(_row()),
         "reg.csv": "model,params_b\nm\u00ad1,70\nm2,8\n"},  # a soft hyphen
        {"expect": "exit2", "registry": "reg.csv",
         "message": "r.jsonl: line 1, column 'model': model 'm1' is written 'm\\xad1' in the "
                    "registry reg.csv"}),
    "records_spell_a_model_two_ways": (
        {"r.jsonl": _jsonl_with(_row(model='"m1\ufeff"'), before=2)},
        {"expect": "exit2",
         "message": "r.jsonl: line 3, column 'model': model 'm1\\ufeff' is also written 'm1' "
                    "(r.jsonl: line 1, column 'model')"}),
    "records_spell_a_predictor_in_nfd": (
        {"r.jsonl": _jsonl_with(_row(model='"Qw\u00e9n"'))
         + _row(model='"m1"', predictor='"Qwe\u0301n"', item_id='"q9"') + "\n"},
        {"expect": "exit2", "message": "column 'predictor': model 'Qwe\\u0301n' is also written"}),
    "look_alike_names_spelt_the_same_everywhere_are_fine": (
        {"r.jsonl": "".join(_row(model='"m\u200b1"', item_id=f'"q{i}"') + "\n" for i in range(3)),
         "reg.csv": "model,params_b\nm\u200b1,70\nm2,8\n"},
        {"expect": "quarantine", "registry": "reg.csv", "reasons": [], "quarantined": 0,
         "read": 3, "used": 3}),
    "deep_inline_tables_in_config": (
        {"r.jsonl": _jsonl_with(_row()), "cfg.toml": "x = " + "{a = " * 50_000 + "1" + "}" * 50_000},
        {"expect": "exit2", "config": "cfg.toml", "message": "(at line 1)"}),
}


def _generated_case(name: str, folder: Path) -> dict[str, Any]:
    files, case = GENERATED[name]
    for file_name, text in files.items():
        if isinstance(text, bytes):
            (folder / file_name).write_bytes(text)
        else:
            (folder / file_name).write_text(text, encoding="utf-8")
    data = [f for f in files if f.endswith((".jsonl", ".csv"))
            and f not in (case.get("registry"), case.get("config"))]
    if case.get("expect") == "exit2":
        return {"name": name, "files": data, "folder": folder, **case}
    return {"name": name, "files": data, "folder": folder, "expect": "quarantine",
            "read": 3, "used": 2, "quarantined": 1, "duplicate": 0, **case}


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
    from selfmodel.records.importers.lmeval import import_lmeval
    from selfmodel.records.importers.mapping import parse_mapping

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
    from selfmodel.records.importers.mapping import load_mapping

    path = tmp_path / "m.toml"
    deep = _arrays(50_000)
    path.write_text('format = "lmeval"\n' + (f"x = {deep}\n" if where == "top" else
                                              f"[fields]\nitem_id = {deep}\n"))
    with pytest.raises(InputError) as info:
        load_mapping(path)
    line = 2 if where == "top" else 3
    assert f"nested too deeply, over 256 levels (at line {line})" in str(info.value)
    assert "\n" not in str(info.value)


# --------------------------------------------------------------------------- resources (class 3)


def _gzip_bomb(path: Path, *, mib: int) -> Path:
    """One record, then ``mib`` MiB of blank lines, gzipped (about 1 KiB per MiB)."""
    import gzip

    with gzip.open(path, "wb", compresslevel=9) as fh:
        if path.name.endswith(".csv.gz"):
            fh.write(b"model,task,item_id,prediction,outcome\nm1,refusal,q0,true,true\n")
        else:
            fh.write((GOOD.format(i=0) + "\n").encode())
        blank = b"\n" * (1 << 20)
        for _ in range(mib):
            fh.write(blank)
    return path


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".csv.gz"])
def test_a_gzip_bomb_is_refused_at_its_limit(
    suffix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Stopped by the declared size limit (here 1 MiB), never decompressed whole."""
    from selfmodel.records.ingest import discover

    bomb = _gzip_bomb(tmp_path / f"bomb{suffix}", mib=4)
    assert bomb.stat().st_size < 20_000
    monkeypatch.setenv("SELFMODEL_MAX_GUNZIP", "1M")
    written: list[int] = []
    real = discover._gunzip
    monkeypatch.setattr(discover, "_GZ_DIR", [])  # a temporary folder of its own

    def spy(path: Path) -> Path:
        try:
            return real(path)
        finally:
            written.append(sum(p.stat().st_size for p in discover._GZ_DIR[0].iterdir()))

    monkeypatch.setattr(discover, "_gunzip", spy)
    out = tmp_path / "out"
    assert main(["ingest", str(bomb), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{bomb}: it decompresses to more than 1 MiB" in err
    assert "SELFMODEL_MAX_GUNZIP=" in err
    assert written == [0]  # the partial copy is removed at once
    assert not out.exists()
    # raised by the option, the same file is read: 1 record, blank lines are not rows
    monkeypatch.setenv("SELFMODEL_MAX_GUNZIP", "5M")
    assert main(["ingest", str(bomb), "--out", str(out)]) == 0
    assert json.loads((out / "ingest.json").read_text())["records_read"] == 1


def test_the_default_gzip_limit_follows_the_compressed_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from selfmodel.records.ingest.discover import gunzip_limit

    monkeypatch.delenv("SELFMODEL_MAX_GUNZIP", raising=False)
    assert gunzip_limit(1 << 20) == 256 << 20  # a 1 MB bomb of 1 GiB is refused
    assert gunzip_limit(1 << 30) == 100 << 30
    for value, limit in [("20G", 20 << 30), ("512k", 512 << 10), ("1.5MiB", 3 << 19),
                         ("1000", 1000)]:
        monkeypatch.setenv("SELFMODEL_MAX_GUNZIP", value)
        assert gunzip_limit(1) == limit
    for value in ("-1", "lots", "inf", "nan"):
        monkeypatch.setenv("SELFMODEL_MAX_GUNZIP", value)
        with pytest.raises(InputError, match="is not a size"):
            gunzip_limit(1)


def test_an_lmeval_gzip_bomb_is_refused_while_streaming(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from selfmodel.records.importers.lmeval import read_lmeval_samples

    folder = tmp_path / "org__m"
    folder.mkdir()
    bomb = _gzip_bomb(folder / "samples_t_2025-02-02T01-02-03.5.jsonl.gz", mib=16)
    monkeypatch.setenv("SELFMODEL_MAX_GUNZIP", "2M")
    with pytest.raises(InputError, match="decompresses to more than 2 MiB"):
        read_lmeval_samples(bomb)


def test_a_full_temporary_disk_is_not_a_bad_gzip(tmp_path: Path) -> None:
    """A good .gz that does not fit into TMPDIR: the message says so (ENOSPC), not 'bad file'."""
    import gzip
    import random
    import subprocess
    import sys

    disk = tmp_path / "tmp"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
                             capture_output=True).returncode == 0
    if not mounted:
        pytest.skip("cannot mount a tmpfs here (needs root and mount)")
    try:
        good = tmp_path / "good.jsonl.gz"
        rng = random.Random(3)
        with gzip.open(good, "wt") as fh:
            for i in range(3000):
                fh.write(GOOD.format(i=f"{i}-{rng.getrandbits(64):x}") + "\n")
        done = subprocess.run(
            [sys.executable, "-m", "selfmodel.cli", "ingest", str(good), "--out",
             str(tmp_path / "out")], env={**os.environ, "TMPDIR": str(disk)},
            capture_output=True, text=True)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert "cannot decompress it into the temporary folder" in done.stderr
        assert "No space left on device" in done.stderr and "TMPDIR" in done.stderr
        assert "not a readable gzip" not in done.stderr
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def _lmeval_with_answers(folder: Path, answers: list[str]) -> Path:
    logs = folder / "org__model-x"
    logs.mkdir(parents=True)
    path = logs / "samples_t_2025-02-02T01-02-03.5.jsonl"
    path.write_text("".join(json.dumps({"doc_id": i, "doc": {"id": f"q{i}"}, "target": "true",
                                        "filtered_resps": [a]}) + "\n"
                            for i, a in enumerate(answers)), encoding="utf-8")
    return path


@pytest.mark.parametrize("pattern", [r"^(a|aa)+$", r"^(a|a)+$", r"(?:a|aa)+b"])
def test_a_regex_that_backtracks_without_end_is_stopped_with_one_line(
    pattern: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from selfmodel.records.importers.lmeval import import_lmeval
    from selfmodel.records.importers.mapping import logs_apply, logs_paths, parse_mapping

    for module in (logs_apply, logs_paths):  # 2 s by default; these patterns would run for years
        monkeypatch.setattr(module, "REGEX_TIMEOUT", 0.2)

    path = _lmeval_with_answers(tmp_path, ["aaa", "a" * 40 + "!"])
    mapping = parse_mapping({"format": "lmeval", "task": "refusal", "fields": {
        "item_id": "doc.id", "outcome": "target",
        "prediction": {"path": "filtered_resps.0", "regex": pattern}}}, source="m.toml")
    with pytest.raises(InputError) as info:
        import_lmeval(path, mapping=mapping)
    message = str(info.value)
    assert message.startswith(f"m.toml: fields.prediction.regex {pattern!r} ran for more than "
                              "0.2 s on the value in")
    assert "(line 2)" in message and "\n" not in message


def test_the_regex_of_the_issue_finishes_at_once(tmp_path: Path) -> None:
    """``^(a+)+$`` on a 35-character answer: hangs ``re``; ``regex`` answers 'no match'."""
    from selfmodel.records.importers.lmeval import import_lmeval
    from selfmodel.records.importers.mapping import parse_mapping

    path = _lmeval_with_answers(tmp_path, ["aaaa", "a" * 35 + "!"])
    mapping = parse_mapping({"format": "lmeval", "task": "refusal", "fields": {
        "item_id": "doc.id", "outcome": "target",
        "prediction": {"path": "filtered_resps.0", "regex": "^(a+)+$"}}})
    res = import_lmeval(path, mapping=mapping)
    assert res.records.get_column("prediction").to_list() == ["aaaa", None]
    assert res.counts["unreadable_values"] == {"prediction": 1}


# --------------------------------------------------------------------------- deep TOML, every reader
# A TOML file nested 50,000 deep (line 2) given to each command and option that reads TOML:
# one line naming the file and the line, exit 2, never a RecursionError (issue 50: `import`
# read the mapping once more before the guarded reader).

#: (argv before the TOML file, the option, the file's first line). ``{rec}``: a records file.
DEEP_TOML_COMMANDS: dict[str, tuple[list[str], str, str]] = {
    "import lmeval --mapping": (["import", "lmeval", "{src}"], "--mapping", 'format = "lmeval"'),
    "import inspect --mapping": (["import", "inspect", "{src}"], "--mapping", 'format = "inspect"'),
    "import mapped --mapping": (["import", "mapped", "{src}"], "--mapping", 'format = "lmeval"'),
    "ingest --mapping": (["ingest", "{rec}"], "--mapping", 'format = "records"'),
    "ingest --config": (["ingest", "{rec}"], "--config", 'tasks = ["refusal"]'),
    "ingest --registry": (["ingest", "{rec}"], "--registry", "[[model]]"),
    "run --mapping": (["run", "{rec}"], "--mapping", 'format = "records"'),
    "run --config": (["run", "{rec}"], "--config", 'tasks = ["refusal"]'),
    "run --registry": (["run", "{rec}"], "--registry", "[[model]]"),
    "run --hypotheses": (["run", "{rec}"], "--hypotheses", "[[hypothesis]]"),
    "fit --hypotheses": (["fit", "{rec}"], "--hypotheses", "[[hypothesis]]"),
    "describe --config": (["describe", "{rec}"], "--config", 'tasks = ["refusal"]'),
    "reduce --config": (["reduce", "{rec}"], "--config", 'tasks = ["refusal"]'),
    "reduce --registry": (["reduce", "{rec}"], "--registry", "[[model]]"),
    "power --design": (["power"], "--design", "[design]"),
}


@pytest.mark.parametrize("command", list(DEEP_TOML_COMMANDS))
def test_deep_toml_is_one_line_in_every_command(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before, option, first = DEEP_TOML_COMMANDS[command]
    monkeypatch.setenv("SELFMODEL_JOBS", "1")
    rec = tmp_path / "r.jsonl"
    rec.write_text(_jsonl_with(_row()), encoding="utf-8")
    src = tmp_path / "logs"
    src.mkdir()
    deep = tmp_path / "deep.toml"
    deep.write_text(f"{first}\nx = {_arrays(50_000)}\n", encoding="utf-8")
    out = tmp_path / "out"
    argv = [a.format(rec=rec, src=src) for a in before] + [option, str(deep), "--out", str(out)]
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "RecursionError" not in err, err[-2000:]
    errors = [line for line in err.splitlines() if line.startswith("selfmodel: error:")]
    assert code == 2 and len(errors) == 1, err[-2000:]
    assert "deep.toml" in errors[0] and "nested too deeply" in errors[0], errors[0]
    assert "line 2" in errors[0], errors[0]
    assert not out.exists()
