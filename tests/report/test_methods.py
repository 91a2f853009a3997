"""The methods paragraph is written from results.json: change a number there, the text follows.

Each test runs on the saved results of the default run (``tests/fixtures/regression/``, fast
layer) and on the quick build's fresh results (``e2e``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from selfmodel.report.methods import methods_text

SAVED = Path(__file__).parents[1] / "fixtures" / "regression" / "results_default.json"


@pytest.fixture(scope="module", params=["saved", pytest.param("quick_build", marks=pytest.mark.e2e)])
def results(request):
    if request.param == "saved":
        return json.loads(SAVED.read_text())
    return json.loads((request.getfixturevalue("quick_build") / "results.json").read_text())


def test_methods_text_states_what_was_fitted(results):
    text = methods_text(results)
    fit = results["fit"]
    s = fit["sampler"]
    assert f"{s['chains']} chains of {s['draws']} draws after {s['tune']} tuning steps" in text
    assert f"seed {fit['seed']}" in text
    assert f"{results['scale_effect']['mean']:.3f}" in text
    for name, (_dist, params) in fit["priors"].items():
        if name == "sigma_family_slope":
            continue
        assert ", ".join(f"{k} = {v:g}" for k, v in params.items()) in text, name
    sdt = results["sdt_effect"]["sensitivity"]
    assert f"the d' slope averaged over tasks was {sdt['mean']:.3f}" in text
    hyp = results["hypotheses"]
    assert f"{len(hyp['declared'])} hypotheses were declared" in text and hyp["sha256"][:12] in text
    assert f"ELPD difference {hyp['scale_term_loo']['elpd_diff']:.1f}" in text
    sv = results["sensitivity"]["scale_variable"]
    assert ("held with the other scale variables" in text) == bool(sv["verdict_holds"])


def test_methods_text_follows_results(results):
    r = copy.deepcopy(results)
    r["fit"]["sampler"]["draws"] = 1234
    r["sdt_effect"]["sensitivity"]["mean"] = 9.8765
    r["sensitivity"]["priors"].update(verdict_holds=False, changed=["priors x2"])
    r["diagnostics"]["passed"] = False
    text = methods_text(r)
    assert "1234 draws" in text and "9.877" in text
    assert "changed with every prior scale halved and doubled (priors x2)" in text
    assert "NOT all met" in text
    r["sensitivity"] = None
    r["hypotheses"] = None
    r["sdt_effect"] = None
    text = methods_text(r)
    assert "hypotheses were declared" not in text and "d' slope" not in text
