"""Model registry: CSV and TOML reading, validation messages, and the registry report."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from selfmodel.records.contract import REGISTRY_SCHEMA, InputError
from selfmodel.records.registry import (
    did_you_mean,
    format_input_error,
    load_registry,
    registry_report,
)


def _write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _error(path: Path) -> str:
    with pytest.raises(InputError) as info:
        load_registry(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    return message


# --------------------------------------------------------------------------- reading


def test_csv_full_schema_and_types(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "reg.csv",
        "model,family,params_b,active_params_b,open_weights,reasoning,capability\n"
        "mix-8x7b,mistral,46.7,12.9,YES,no,0.5\n"
        "gpt-4o,gpt,,,false,0,\n",
    )
    reg = load_registry(path)
    assert dict(reg.schema) == REGISTRY_SCHEMA
    assert [r[:7] for r in reg.rows()] == [
        ("mix-8x7b", "mistral", 46.7, 12.9, True, False, 0.5),
        ("gpt-4o", "gpt", None, None, False, False, None),
    ]


def test_csv_missing_optional_columns_are_null(tmp_path: Path) -> None:
    reg = load_registry(_write(tmp_path, "reg.csv", "model\nm1\nm2\n"))
    assert dict(reg.schema) == REGISTRY_SCHEMA
    assert reg.get_column("model").to_list() == ["m1", "m2"]
    assert reg.get_column("params_b").null_count() == 2


def test_csv_bom_crlf_blank_lines_and_whitespace(tmp_path: Path) -> None:
    path = _write(tmp_path, "reg.csv", b"\xef\xbb\xbfmodel , params_b\r\n m1 , 8 \r\n\r\nm2,70\r\n")
    assert load_registry(path).select("model", "params_b").rows() == [("m1", 8.0), ("m2", 70.0)]


def test_empty_csv_gives_empty_registry(tmp_path: Path) -> None:
    reg = load_registry(_write(tmp_path, "reg.csv", ""))
    assert reg.height == 0 and dict(reg.schema) == REGISTRY_SCHEMA


def test_toml_array_of_tables(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "reg.toml",
        '[[model]]\nmodel = "m1"\nfamily = "llama"\nparams_b = 8\nopen_weights = true\n\n'
        '[[model]]\nmodel = "m2"\nparams_b = "70"\nreasoning = "yes"\n',
    )
    reg = load_registry(path)
    assert reg.select("model", "family", "params_b", "open_weights", "reasoning").rows() == [
        ("m1", "llama", 8.0, True, None),
        ("m2", None, 70.0, None, True),
    ]


# --------------------------------------------------------------------------- CSV errors


@pytest.mark.parametrize(
    ("row", "column", "fragment"),
    [
        ("m2,-70", "params_b", "size '-70' is negative"),
        ("m2,0", "params_b", "size '0' is zero"),
        ("m2,seventy", "params_b", "'seventy' is not a number"),
        ("m2,nan", "params_b", "'nan' is not a finite number"),
        ("m2,inf", "params_b", "'inf' is not a finite number"),
    ],
)
def test_bad_sizes_name_line_and_column(tmp_path: Path, row: str, column: str, fragment: str):
    path = _write(tmp_path, "reg.csv", f"model,params_b\nm1,8\n{row}\n")
    message = _error(path)
    assert f"line 3, column '{column}'" in message
    assert fragment in message
    assert "positive number" in message


def test_negative_active_params(tmp_path: Path) -> None:
    message = _error(_write(tmp_path, "reg.csv", "model,active_params_b\nm1,-1\n"))
    assert "line 2, column 'active_params_b': size '-1' is negative" in message


def test_active_larger_than_total(tmp_path: Path) -> None:
    path = _write(tmp_path, "reg.csv", "model,params_b,active_params_b\nm1,8,20\n")
    assert "line 2, column 'active_params_b'" in _error(path)


def test_capability_may_be_negative_but_must_be_a_number(tmp_path: Path) -> None:
    ok = load_registry(_write(tmp_path, "ok.csv", "model,capability\nm1,-0.5\n"))
    assert ok.get_column("capability").to_list() == [-0.5]
    message = _error(_write(tmp_path, "bad.csv", "model,capability\nm1,high\n"))
    assert "line 2, column 'capability': 'high' is not a number" in message


def test_bad_boolean(tmp_path: Path) -> None:
    message = _error(_write(tmp_path, "reg.csv", "model,open_weights\nm1,sometimes\n"))
    assert "line 2, column 'open_weights': 'sometimes' is not a boolean" in message


def test_empty_model_name(tmp_path: Path) -> None:
    message = _error(_write(tmp_path, "reg.csv", "model,params_b\nm1,8\n  ,70\n"))
    assert "line 3, column 'model': empty model name" in message


def test_duplicate_model(tmp_path: Path) -> None:
    message = _error(_write(tmp_path, "reg.csv", "model,params_b\nm1,8\nm2,9\nm1,8\n"))
    assert "line 4, column 'model': duplicate model 'm1' (first on line 2)" in message


def test_unknown_column_did_you_mean(tmp_path: Path) -> None:
    message = _error(_write(tmp_path, "reg.csv", "model,parms_b\nm1,8\n"))
    assert "line 1, column 'parms_b': unknown registry column. Did you mean 'params_b'?" in message


def test_missing_model_column(tmp_path: Path) -> None:
    message = _error(_write(tmp_path, "reg.csv", "models,params_b\nm1,8\n"))
    assert "line 1, column 'model'" in message
    assert "present: models, params_b" in message
    assert "Did you mean 'models'?" in message


def test_too_many_fields(tmp_path: Path) -> None:
    message = _error(_write(tmp_path, "reg.csv", "model,params_b\nm1,8,9\n"))
    assert "line 2:" in message and "3 fields but the header has 2" in message


def test_non_utf8_registry(tmp_path: Path) -> None:
    message = _error(_write(tmp_path, "reg.csv", b"model,family\nm1,caf\xe9\n"))
    assert "line 2" in message and "UTF-8" in message


def test_unsupported_suffix(tmp_path: Path) -> None:
    assert "unsupported registry file type '.json'" in _error(_write(tmp_path, "reg.json", "{}"))


def test_missing_file(tmp_path: Path) -> None:
    assert "cannot read the registry" in _error(tmp_path / "nope.csv")


def test_line_numbers_count_quoted_newlines(tmp_path: Path) -> None:
    path = _write(tmp_path, "reg.csv", 'model,family,params_b\nm1,"two\nlines",8\nm2,x,-1\n')
    assert "line 4, column 'params_b'" in _error(path)


# --------------------------------------------------------------------------- TOML errors


def test_toml_negative_size_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "reg.toml",
        '[[model]]\nmodel = "m1"\nparams_b = 8\n\n[[model]]\nmodel = "m2"\nparams_b = -70\n',
    )
    assert "line 7, column 'params_b': size '-70' is negative" in _error(path)


def test_toml_duplicate_model(tmp_path: Path) -> None:
    path = _write(tmp_path, "reg.toml", '[[model]]\nmodel = "m1"\n[[model]]\nmodel = "m1"\n')
    assert "line 4, column 'model': duplicate model 'm1' (first on line 2)" in _error(path)


def test_toml_unknown_key(tmp_path: Path) -> None:
    path = _write(tmp_path, "reg.toml", '[[model]]\nmodel = "m1"\nfamliy = "x"\n')
    assert "line 3, column 'famliy'" in _error(path)
    assert "Did you mean 'family'?" in _error(path)


def test_toml_unknown_top_level(tmp_path: Path) -> None:
    path = _write(tmp_path, "reg.toml", '[[models]]\nmodel = "m1"\n')
    message = _error(path)
    assert "line 1, column 'models'" in message and "Did you mean 'model'?" in message


def test_toml_table_without_model(tmp_path: Path) -> None:
    path = _write(tmp_path, "reg.toml", '[[model]]\nfamily = "x"\n')
    assert "line 1, column 'model'" in _error(path)


def test_toml_syntax_error(tmp_path: Path) -> None:
    assert "invalid TOML" in _error(_write(tmp_path, "reg.toml", "[[model]\nmodel = 1\n"))


# --------------------------------------------------------------------------- report


def test_registry_report() -> None:
    records = pl.DataFrame({"model": ["a", "b", "c", "a"]})
    registry = pl.DataFrame(
        {"model": ["a", "b", "z", "y"], "params_b": [1.0, None, 3.0, None]},
    )
    assert registry_report(records, registry) == {
        "models_not_in_registry": ["c"],
        "models_without_size": ["b", "y"],
        "registry_models_without_records": ["y", "z"],
    }


def test_registry_report_without_registry() -> None:
    records = pl.DataFrame({"model": ["b", "a"]})
    report = registry_report(records, None)
    assert report["models_not_in_registry"] == ["a", "b"]
    assert report["models_without_size"] == []


# --------------------------------------------------------------------------- helpers


def test_format_input_error_is_one_line() -> None:
    message = format_input_error("f.csv", "bad\nthing", "do\r\nthis", line=3, column="x")
    assert message == "f.csv: line 3, column 'x': bad thing. do this."
    assert format_input_error(None, "what.", "todo.") == "what. todo."
    assert format_input_error("f", "Really?", "Yes") == "f: Really? Yes."


def test_did_you_mean() -> None:
    assert did_you_mean("famly", ["family", "model"]) == " Did you mean 'family'?"
    assert did_you_mean("qqq", ["family"]) == ""


def test_extra_registry_columns_are_ignored_but_typos_are_not(tmp_path):
    """Extra columns (developer, aliases) are common in registries; a misspelt one is an error."""
    ok = tmp_path / "reg.csv"
    ok.write_text("model,family,params_b,developer,aliases\na,fam,7,ACME,a|A\n")
    reg = load_registry(ok)
    assert reg["params_b"].to_list() == [7.0]
    assert "developer" not in reg.columns
    typo = tmp_path / "typo.csv"
    typo.write_text("model,family,param_b\na,fam,7\n")
    with pytest.raises(InputError, match="column 'param_b'.*Did you mean 'params_b'"):
        load_registry(typo)
