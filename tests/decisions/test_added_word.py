"""Adding a decision word is one file and one registration line.

The word (``tests/fixtures/added_word/uninformative.py``) lives outside ``analysis/``: its
meaning, sign, colour and the condition under which the declared rule gives it. Registered,
the rule gives it, ``results.json`` carries it and the report explains it.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from selfmodel.cli import main
from selfmodel.decisions.hypotheses import DecisionRule, decide
from selfmodel.records import contract
from selfmodel.report.sections import verdict as verdict_sec
from selfmodel.report.sections.common import Report, esc
from selfmodel.robustness.sensitivity import direction_of

ROOT = Path(__file__).resolve().parents[2]
WORD_FILE = ROOT / "tests" / "fixtures" / "added_word" / "uninformative.py"
QUICK = ["--draws", "50", "--tune", "50", "--chains", "2", "--jobs", "1", "--quiet"]


@pytest.fixture
def uninformative():
    spec = importlib.util.spec_from_file_location("uninformative", WORD_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    contract.register_word(module.WORD, before="no_credible_effect")  # the registration line
    yield module.WORD
    contract.unregister_word(module.WORD.name)


def test_the_rule_gives_it_where_it_is_placed(uninformative) -> None:
    rng = np.random.default_rng(1)
    wide = decide(rng.normal(0.0, 1.0, 4000), DecisionRule(), n_models=10)
    assert wide["decision"] == "uninformative" and wide["reason"] == uninformative.reason
    assert wide["meaning"] == uninformative.meaning
    narrow = decide(rng.normal(0.05, 0.12, 4000), DecisionRule(), n_models=10)
    assert narrow["decision"] == "no_credible_effect"  # not wide enough: the next word
    assert decide(rng.normal(0.5, 0.1, 4000), DecisionRule(), n_models=10)["decision"] == "improves"
    assert direction_of("uninformative") == "unresolved"
    with pytest.raises(ValueError, match="registered already"):
        contract.register_word(uninformative, before="improves")
    with pytest.raises(ValueError, match="built-in"):
        contract.unregister_word("improves")


def test_unregistered_the_rule_is_the_built_in_one() -> None:
    rng = np.random.default_rng(1)
    assert decide(rng.normal(0.0, 1.0, 4000), DecisionRule(), n_models=10)["decision"] == \
        "no_credible_effect"
    assert "uninformative" not in contract.word_meanings()


def test_it_reaches_results_json_and_the_report(uninformative, tmp_path: Path,
                                                fake_nutpie: dict[str, int]) -> None:
    """With the fake sampler the posterior is the prior: a wide interval around 0."""
    out = tmp_path / "run"
    assert main(["run", "data_raw", "--out", str(out), "--models", "scale", "--no-power",
                 "--no-robustness", "--no-report", *QUICK]) == 0
    results = json.loads((out / "results.json").read_text())
    words = {results["scale_effect"]["decision"],
             results["scale_effect"].get("decision_if_passed"),
             *(t.get("decision_if_passed", t["decision"])
               for t in results["scale_effect"]["per_task"].values())}
    assert "uninformative" in words, words
    text = verdict_sec.table(Report(results, {}, None, out, 6.3, 8.5))
    assert f"`uninformative`: {esc(uninformative.meaning)}" in text
