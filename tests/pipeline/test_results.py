"""``selfmodel.pipeline.results``: the one writer of results.json, tested on hand-made run states.

No sampling: every section is put into a :class:`selfmodel.pipeline.state.RunState` by hand (as each
stage would leave it), and :func:`selfmodel.pipeline.results.write_results` must write exactly those
sections under the contract's keys, rounded, deterministically.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from selfmodel.pipeline.results import (
    DATA_KEYS,
    RESULT_KEYS,
    build_results,
    data_section,
    rounded,
    write_results,
)
from selfmodel.pipeline.state import Inputs, RunConfig, RunState
from selfmodel.records.contract import RESULTS_SCHEMA_VERSION

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "regression" / "results_default.json"


def _state(tmp_path: Path) -> RunState:
    cfg = RunConfig(out=tmp_path)
    state = RunState(config=cfg, inputs=Inputs([Path("a.jsonl")], None, None))
    state.data_section = data_section({"sha256": "abc", "records_read": 10, "registry_report": {"x": 1}})
    state.models_section = [{"model": "m1", "records": 10}]
    state.tasks_section = [{"task": "t", "n": 10}]
    state.by_model_task_section = [{"model": "m1", "task": "t", "accuracy": np.float64(1 / 3)}]
    state.effect_section = {"decision": "not_estimable", "mean": float("nan"), "per_task": {}}
    state.diagnostics_section = {"passed": np.bool_(False), "max_rhat": None}
    state.zoo_section = {"m": {"fitted": False, "reason": "why"}}
    state.headline_sections = {"sdt_effect": None}
    state.hypotheses_section = {"rows": [], "scale_term_loo": None}
    state.settings_section = {"seed": np.int64(5), "rule": (0.1, 0.95)}
    return state


def test_every_key_comes_from_its_state_field(tmp_path: Path) -> None:
    state = _state(tmp_path)
    out = build_results(state)
    assert out["schema_version"] == RESULTS_SCHEMA_VERSION
    assert out["data"]["sha256"] == "abc" and out["data"]["registry"] == {"x": 1}
    assert set(out["data"]) == {*DATA_KEYS, "registry"}
    assert out["models"] == [{"model": "m1", "records": 10}]
    assert out["by_model_task"][0]["accuracy"] == 0.333333  # rounded to 6 decimals
    assert out["scale_effect"]["mean"] is None  # NaN is not JSON: None
    assert out["diagnostics"]["passed"] is False and type(out["diagnostics"]["passed"]) is bool
    assert out["model_zoo"] == {"m": {"fitted": False, "reason": "why"}}
    assert out["settings"] == {"seed": 5, "rule": [0.1, 0.95]}
    assert out["sdt_effect"] is None
    # sections no stage filled are null, never missing
    for key in ("fit", "curves", "accuracy_points", "truth_comparison", "sensitivity",
                "operating_characteristics", "design_sensitivity", "variance_components"):
        assert key in out and out[key] is None


def test_a_headline_section_becomes_a_top_level_key(tmp_path: Path) -> None:
    state = _state(tmp_path)
    state.headline_sections = {"sdt_effect": {"fit_model": "sdt", "finding": True},
                               "new_effect": {"fit_model": "new", "finding": False}}
    out = build_results(state)
    assert out["sdt_effect"]["fit_model"] == "sdt"
    assert out["new_effect"] == {"fit_model": "new", "finding": False}


def test_write_results_writes_the_dict_deterministically(tmp_path: Path) -> None:
    state = _state(tmp_path)
    written = write_results(state)
    text = (tmp_path / "results.json").read_text()
    assert json.loads(text) == written == build_results(state)
    assert text == json.dumps(written, indent=2, sort_keys=True) + "\n"
    write_results(_state(tmp_path))
    assert (tmp_path / "results.json").read_text() == text


def test_the_key_list_is_the_contract_of_a_real_run() -> None:
    """RESULT_KEYS (documented in docs/results.md) are exactly the keys of the default run."""
    fixture = json.loads(FIXTURE.read_text())
    assert set(fixture) == set(RESULT_KEYS)
    assert set(build_results(RunState(RunConfig(), Inputs([], None, None),
                                      headline_sections={"sdt_effect": None}))) == set(RESULT_KEYS)


@pytest.mark.parametrize("value, expected", [
    (np.float32(0.5), 0.5), (float("inf"), None), ({1: (2.0000004,)}, {"1": [2.0]}),
    (np.int32(3), 3), ("text", "text"),
])
def test_rounded(value, expected) -> None:
    assert rounded(value) == expected


def test_docs_list_every_key() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "results.md").read_text()
    for key in RESULT_KEYS:
        assert f"`{key}`" in doc, key
