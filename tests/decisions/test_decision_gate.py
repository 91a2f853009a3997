"""No decision word in results.json where the report says "not decided" (issue 53).

Before issue 53, ``scale_effect.decision`` said ``"improves"`` beside ``finding: false`` while
the report said "not decided (its fit failed the diagnostics gate)". Now every decision of a
failed fit is ``not_decided`` and the rule's word is ``decision_if_passed``
(``selfmodel.decisions.gate``). Checked on the regression fixture with every fit made to fail,
and on whole runs with fake fits (``tests/fakes.py``: 50 prior draws fail the gate).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from selfmodel.cli import main
from selfmodel.decisions.gate import gate_decisions
from selfmodel.decisions.verdict import NOT_DECIDED, findings
from selfmodel.records.contract import DECISIONS, RESULTS_SCHEMA_VERSION, UNDECIDED
from selfmodel.report import sections
from selfmodel.report.sections.common import Report

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "regression" / "results_default.json"
WORDS = set(DECISIONS) - {"not_estimable", UNDECIDED}
DECISION_KEYS = ("decision", "unadjusted_decision", "bayes_decision")
#: Decisions no fit gates: bootstrap intervals, shipped studies, the decision kinds' labels.
UNGATED = ("/validation_map", "/training_effect/privileged_access", "/confidence_calibration_contrasts",
           "/self_vs_other_rescored", "/operating_characteristics", "/design_sensitivity")
QUICK = ["--no-report", "--no-power", "--no-robustness", "--jobs", "1", "--draws", "50",
         "--tune", "50", "--chains", "2", "--quiet"]


def decision_words(node: Any, path: str = "") -> list[tuple[str, str, str]]:
    """Every (path, key, word) of a decision word in a results dict."""
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k in DECISION_KEYS and isinstance(v, str):
                out.append((path, k, v))
            out += decision_words(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += decision_words(v, f"{path}[{i}]")
    return out


def _all_failed(results: dict[str, Any]) -> dict[str, Any]:
    """The fixture with every fit failing its gate (diagnostics, refits, hypotheses, members)."""
    results = copy.deepcopy(results)
    results["diagnostics"]["passed"] = False
    results["scale_effect"]["finding"] = False
    for entry in results["model_zoo"].values():
        if isinstance(entry, dict) and entry.get("fitted"):
            entry["diagnostics"]["passed"] = False
    results["sdt_effect"]["finding"] = False
    for r in results["hypotheses"]["rows"]:
        r["finding"] = False
    for m in results["hypotheses"]["multiplicity"]["confirmatory"]["members"]:
        m["finding"] = False
    sens = results["sensitivity"]
    for entry in [sens["priors"], sens["scale_variable"], *sens["effects"].values(),
                  *sens["effects_scale_variable"].values()]:
        for v in entry["variants"]:
            v["diagnostics_passed"] = False
    results["confounds"]["without_family"]["diagnostics_passed"] = False
    results["missingness"]["strict_accuracy_refit"]["strict"]["diagnostics_passed"] = False
    results["training_effect"]["finding"] = False
    return results


@pytest.fixture(scope="module")
def fixture() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text())


def test_no_decision_word_is_left_where_every_fit_failed(fixture) -> None:
    before = _all_failed(fixture)
    words_before = {(p, k): w for p, k, w in decision_words(before)}
    after = gate_decisions(copy.deepcopy(before))
    left = [(p, k, w) for p, k, w in decision_words(after) if w in WORDS and not p.startswith(UNGATED)]
    assert left == []
    gated = [(p, k) for p, k, w in decision_words(after) if w == UNDECIDED]
    assert len(gated) > 100
    for p, k in gated:  # the rule's word is kept beside it
        node = after
        for part in re.findall(r"/([^/\[]+)|\[(\d+)\]", p):
            node = node[part[0]] if part[0] else node[int(part[1])]
        assert node[f"{k}_if_passed"] == words_before[(p, k)], (p, k)
        if k == "decision" and "meaning" in node:
            assert node["meaning"] == NOT_DECIDED
    assert after["scale_effect"]["decision_if_passed"] == fixture["scale_effect"]["decision"]
    row = after["hypotheses"]["rows"][0]
    assert row["supported"] is None and "supported_if_passed" in row


def test_nothing_is_gated_where_the_fits_passed_or_the_run_is_exploratory(fixture) -> None:
    assert gate_decisions(copy.deepcopy(fixture)) == fixture  # the default run passes every gate
    exploratory = _all_failed(fixture)
    exploratory["settings"]["preset"] = "exploratory"
    assert gate_decisions(copy.deepcopy(exploratory)) == exploratory


def test_the_report_and_the_first_screen_read_gated_results(fixture) -> None:
    results = gate_decisions(_all_failed(fixture))
    rep = Report(results, {}, None, FIXTURE.parent, 6.3, 8.5)
    table = sections.verdict.table(rep)
    assert "not decided \\(its fit failed the diagnostics gate\\)" in table
    texts = [f["text"] for f in findings(results)]
    assert any("not decided; as computed it is" in t for t in texts)
    for name in sections.__all__:  # every text block of the report renders from gated results
        module = getattr(sections, name)
        for fname in getattr(module, "__all__", []):
            f = getattr(module, fname)
            if callable(f) and list(getattr(f, "__annotations__", {})) == ["rep", "return"] \
                    and f.__annotations__["return"] == "str":
                f(rep)


def _records(folder: Path, *, sizes: bool) -> tuple[Path, Path]:
    rng = np.random.default_rng(5)
    rows = [{"model": m, "task": t, "item_id": str(i), "prediction": bool(rng.random() < 0.6),
             "outcome": bool(rng.random() < 0.6)}
            for m in ("m1", "m2", "m3", "m4") for t in ("a", "b") for i in range(40)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "registry.csv").write_text("model,family,params_b\n" + "".join(
        f"m{j},f,{10 ** j if sizes else ''}\n" for j in range(1, 5)))
    return folder / "r.jsonl", folder / "registry.csv"


@pytest.mark.parametrize("sizes", [True, False], ids=["scale model", "contrast model"])
def test_a_run_whose_fit_fails_writes_not_decided(tmp_path, fake_nutpie, sizes) -> None:
    records, registry = _records(tmp_path / "data", sizes=sizes)
    out = tmp_path / "out"
    assert main(["run", str(records), "--registry", str(registry), "--out", str(out),
                 "--models", "scale", *QUICK]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["schema_version"] == RESULTS_SCHEMA_VERSION == "2.0"
    if sizes:
        eff = results["scale_effect"]
        assert eff["finding"] is False  # 50 prior draws per chain fail the gate
        assert eff["decision"] == UNDECIDED and eff["decision_if_passed"] in WORDS
        assert all(t["decision"] == UNDECIDED for t in eff["per_task"].values())
    else:
        sec = results["contrasts"]
        assert sec["finding"] is False
        decided = [d for by in sec["contrasts"].values() for d in by.values()]
        assert decided and all(d["decision"] == UNDECIDED and d["decision_if_passed"] in WORDS
                               for d in decided)
    left = [(p, k, w) for p, k, w in decision_words(results) if w in WORDS and not p.startswith(UNGATED)]
    assert left == []
