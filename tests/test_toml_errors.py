"""``selfmodel.common.toml_errors``: the one key-to-line lookup and did-you-mean of every TOML reader."""

from __future__ import annotations

from selfmodel.common.toml_errors import did_you_mean, key_line

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
