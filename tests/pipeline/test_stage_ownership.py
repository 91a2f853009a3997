"""Each stage writes its own sections of ``results.json`` and no other stage's.

The whole pipeline runs on the default data with the fake sampler (tests/fakes.py: prior
draws shaped as a posterior, no compiling), robustness and power included. Before and after
each stage every ``*_section`` field of the run's state is compared: a stage may change only
the fields :data:`selfmodel.pipeline.stages.SECTION_OWNERS` gives it.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest

from selfmodel.pipeline import stages
from selfmodel.pipeline.state import RunConfig, RunState

QUICK_SAMPLER = {"draws": 50, "tune": 50, "chains": 2}


def _sections(state: RunState) -> dict[str, object]:
    return {f.name: copy.deepcopy(getattr(state, f.name)) for f in dataclasses.fields(state)
            if f.name.endswith("_section") or f.name.endswith("_sections")}


def test_no_stage_writes_another_stages_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                fake_nutpie: dict[str, int]) -> None:
    from selfmodel.fitting.settings import SamplerSettings

    written: dict[str, set[str]] = {}
    for i, stage in enumerate(stages.STAGES):
        def spy(state: RunState, say, _stage=stage) -> None:
            before = _sections(state)
            _stage(state, say)
            after = _sections(state)
            written[_stage.__name__] = {k for k in after if after[k] != before[k]}
        monkeypatch.setattr(stages, "STAGES", (*stages.STAGES[:i], spy, *stages.STAGES[i + 1:]))
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    cfg = RunConfig(out=tmp_path / "out", report=False, sampler=SamplerSettings(**QUICK_SAMPLER))
    results = stages.run(cfg)
    print("WRITTEN", {k: sorted(v) for k, v in written.items()})
    for name, fields in written.items():
        assert fields <= set(stages.SECTION_OWNERS[name]), (name, fields - set(stages.SECTION_OWNERS[name]))
    owned = [f for fs in stages.SECTION_OWNERS.values() for f in fs]
    assert len(owned) == len(set(owned))  # one owner per section
    assert written["stage_robustness"]  # it ran and wrote its own
    # and results.json shows the robustness checks where readers look for them
    assert results["confounds"]["without_family"]["family"] == results["confounds"]["largest_family"]
    assert "same_decision" in results["missingness"]["strict_accuracy_refit"]
    mixed = results["mixed_predictive"]
    assert mixed["status"] != "estimated" or "holdout_family" in mixed


def test_a_flagged_held_out_family_fails_the_mixed_check() -> None:
    from selfmodel.robustness.mixed_check import with_holdout_family

    mixed = {"status": "estimated", "passed": True, "flagged": []}
    ok = with_holdout_family(mixed, {"family": "a", "flagged": False})
    assert ok is not None and ok["passed"] is True and ok["holdout_family"]["family"] == "a"
    bad = with_holdout_family(mixed, {"family": "a", "flagged": True, "p_value_discrepancy": 0.01,
                                      "p_value_accuracy": 0.2})
    assert bad is not None and bad["passed"] is False
    assert bad["flagged"] == [{"kind": "family (held out)", "group": "a", "p_value": 0.01}]
    assert mixed == {"status": "estimated", "passed": True, "flagged": []}  # not changed
    assert with_holdout_family(None, {"family": "a"}) is None
