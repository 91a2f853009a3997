"""``selfmodel.common.toml_errors`` and ``toml_tables``: the key-to-line lookup, did-you-mean, typed TOML files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar

import pytest
from pydantic import Field, model_validator

from selfmodel.common.toml_errors import did_you_mean, key_line
from selfmodel.records.contract import InputError
from selfmodel.records.toml_tables import BadValueError, Table, load

TEXT = """\
tasks = ["refusal"]
rope = 0.5

[map]
item_id = "qid"
"rope" = "x"

[defaults]
rope = 0.2

[[hypothesis]]
name = "a"
rope = 0.3

[[hypothesis]]
name = "b"

[[hypothesis]]
rope = 0.4

[families.llama]
sizes = [1, 8]
"""


def test_top_level_keys_and_table_headers() -> None:
    assert key_line(TEXT, "tasks") == 1
    assert key_line(TEXT, "rope") == 2  # the top-level one, not those inside tables
    assert key_line(TEXT, "map") == 4  # a table's header
    assert key_line(TEXT, "absent") is None


def test_keys_inside_a_table_and_sub_table_headers() -> None:
    assert key_line(TEXT, "item_id", table="map") == 5
    assert key_line(TEXT, "rope", table="map") == 6  # quoted key
    assert key_line(TEXT, "rope", table="defaults") == 9
    assert key_line(TEXT, "llama", table="families") == 21
    assert key_line(TEXT, "sizes", table="families.llama") == 22
    assert key_line(TEXT, "item_id", table="defaults") is None


def test_arrays_of_tables_by_index() -> None:
    assert key_line(TEXT, "rope", table="hypothesis", index=0) == 13
    assert key_line(TEXT, "rope", table="hypothesis", index=1) is None
    assert key_line(TEXT, "rope", table="hypothesis", index=2) == 19
    assert key_line(TEXT, "name", table="hypothesis", index=1) == 16
    assert key_line(TEXT, "name", table="hypothesis") == 12  # any: the first


def test_did_you_mean() -> None:
    assert did_you_mean("prob_treshold", ["rope", "prob_threshold"]) == " Did you mean 'prob_threshold'?"
    assert did_you_mean("zzz", ["rope"]) == ""


# --------------------------------------------------------------------------- toml_tables


class _Inner(Table):
    rope: Annotated[float, Field(ge=0)] = 0.1
    HINTS: ClassVar[dict[str, tuple[str, str]]] = {"rope": ("value {value} is negative", "Write rope = 0.1")}


class _Outer(Table):
    name: str
    entry: list[_Inner] = []
    sub: dict[str, _Inner] = {}
    UNKNOWN: ClassVar[str] = "unknown outer key"

    @model_validator(mode="after")
    def _named(self) -> _Outer:
        if self.name == "bad":
            raise BadValueError("rope", "bad names have no rope", "Rename", table="sub.x")
        return self


def _problem(tmp_path: Path, text: str) -> str:
    path = tmp_path / "f.toml"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        load(path, _Outer, "test")
    msg = str(info.value)
    assert msg.startswith(str(path)) and "\n" not in msg
    return msg[len(str(path)):]


def test_model_errors_name_the_line_of_the_key(tmp_path: Path) -> None:
    text = 'name = "a"\n[[entry]]\nrope = 1\n[[entry]]\nrope = -1\n'
    assert _problem(tmp_path, text) == (
        ": line 5, column 'rope': value -1 is negative. Write rope = 0.1.")
    text = 'name = "a"\n[sub.x]\nrope = 1\n[sub.y]\nrpe = 1\n'
    assert _problem(tmp_path, text) == (
        ": line 5, column 'rpe': unknown key. Did you mean 'rope'? Allowed keys are rope.")
    assert _problem(tmp_path, 'nme = "a"\n').startswith(
        ": line 1, column 'nme': unknown outer key. Did you mean 'name'?")
    assert _problem(tmp_path, "[sub]\n") == ": column 'name': Field required. Fix the value."
    text = 'name = "bad"\n[sub.x]\nrope = 1\n'
    assert _problem(tmp_path, text) == ": line 3, column 'rope': bad names have no rope. Rename."


def test_unreadable_files_are_one_line(tmp_path: Path) -> None:
    assert "line 2" in _problem(tmp_path, 'name = "a"\nx = = 1\n')
    assert "not valid TOML" in _problem(tmp_path, 'name = "a"\nx = [\n')
    with pytest.raises(InputError, match="no such test file"):
        load(tmp_path / "absent.toml", _Outer, "test")
