"""Confirmatory and exploratory decisions, one rule per decided slope (issue 28.7).

The hypotheses file declares which hypotheses are confirmatory; their decisions are decided
again as one family with Bonferroni-adjusted HDIs (``selfmodel.decisions.multiplicity
.confirmatory_family``) and every decision carries its ``role``. ``--rope`` and the file can
no longer give two rules for one slope (``selfmodel.decisions.hypotheses.one_rule``). No sampling:
synthetic posteriors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sign_rule import sign_claims  # tests/ is on sys.path (pytest's rootdir-relative import)

from selfmodel.common import arviz_ops
from selfmodel.decisions.hypotheses import (
    DecisionRule,
    Hypothesis,
    decide,
    load_hypotheses,
    one_rule,
)
from selfmodel.decisions.multiplicity import confirmatory_family
from selfmodel.decisions.verdict import confirmatory_finding, findings
from selfmodel.records.contract import NEGATIVE_DECISIONS, POSITIVE_DECISIONS, InputError


def test_the_default_file_declares_the_two_overall_slopes_confirmatory() -> None:
    roles = {h.name: h.role for h in load_hypotheses()}
    assert roles == {"accuracy_overall": "confirmatory", "accuracy_by_task": "exploratory",
                     "dprime_overall": "confirmatory", "dprime_by_task": "exploratory"}


def test_a_bad_role_is_one_line_with_a_hint(tmp_path: Path) -> None:
    p = tmp_path / "h.toml"
    p.write_text('[[hypothesis]]\nname = "a"\nmodel = "scale"\nparameter = "beta"\nrole = "confirmed"\n')
    with pytest.raises(InputError) as info:
        load_hypotheses(p)
    msg = str(info.value)
    assert "\n" not in msg and "line 5" in msg and "Did you mean 'confirmatory'?" in msg


def test_two_rules_for_the_decided_slopes_stop_the_run() -> None:
    hs = [Hypothesis("acc", rope=0.1), Hypothesis("tasks", parameter="slope_task[*]", rope=0.2)]
    with pytest.raises(InputError) as info:
        one_rule(hs, DecisionRule(), rope_given=False, path="hyp.toml")
    msg = str(info.value)
    assert "\n" not in msg and "acc: rope 0.1" in msg and "tasks: rope 0.2" in msg and "--rope" in msg


def test_the_file_sets_the_run_rule_and_rope_overrides_it() -> None:
    hs = [Hypothesis("acc", rope=0.2, hdi_prob=0.9), Hypothesis("other", parameter="sigma_family", rope=5.0)]
    rule, out, source = one_rule(hs, DecisionRule(), rope_given=False)
    assert (rule.rope, rule.hdi_prob) == (0.2, 0.9) and "acc" in source
    assert out[1].rope == 5.0  # not a decided slope: its own rule stands
    rule, out, source = one_rule(hs, DecisionRule(rope=0.05), rope_given=True)
    assert rule.rope == 0.05 and out[0].rope == 0.05 and out[1].rope == 5.0
    assert source.startswith("--rope")


def _evidence(means: dict[str, float], sd: float = 0.1, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    post = xr.Dataset({k: (("chain", "draw"), rng.normal(m, sd, (2, 2000))) for k, m in means.items()})

    class Ev:
        idata, n_models = arviz_ops.from_datasets(posterior=post), 10

    return {"scale": Ev()}


def _row(name: str, parameter: str, role: str = "confirmatory", decision: str = "improves") -> dict:
    return {"role": role, "name": name, "hypothesis": name, "model": "scale", "parameter": parameter,
            "label": None, "predicted": "improves", "direction": "increase", "decision": decision,
            "rule": {"rope": 0.1, "hdi_prob": 0.94, "min_models": 3}}


def test_the_family_is_decided_at_the_bonferroni_level() -> None:
    ev = _evidence({"beta": 0.3, "gamma": 0.5, "delta": 0.0})
    rows = [_row("a", "beta"), _row("b", "gamma"), _row("c", "delta", role="exploratory")]
    fam = confirmatory_family(rows, ev)
    assert fam["size"] == 2 and fam["hdi_prob"] == pytest.approx(0.97)
    assert [m["name"] for m in fam["members"]] == ["a", "b"]
    assert all(m["hdi_prob"] == pytest.approx(0.97) for m in fam["members"])
    a = fam["members"][0]
    assert a["decision"] == "credibly_positive"  # 0.3 +- 0.1: clears 0.1 at 94%, not at 97%
    assert fam["supported"] is False
    (joint,) = fam["joint"]
    assert joint["members"] == 2 and 0.99 < joint["prob_all_predicted_sign"] <= 1.0
    assert confirmatory_family([rows[2]], ev)["size"] == 0


@settings(max_examples=40, deadline=None)
@given(means=st.lists(st.floats(-0.6, 0.6), min_size=1, max_size=4), seed=st.integers(0, 1000))
def test_a_family_member_never_claims_more_than_its_own_decision(means: list[float], seed: int) -> None:
    names = [f"v{i}" for i in range(len(means))]
    ev = _evidence(dict(zip(names, means, strict=True)), seed=seed)
    rows = []
    for n in names:
        d = decide(ev["scale"].idata.posterior[n].values, DecisionRule(), n_models=10)
        rows.append({**_row(n, n), "decision": d["decision"]})
    fam = confirmatory_family(rows, ev)
    for r, m in zip(rows, fam["members"], strict=True):
        if m["decision"] in POSITIVE_DECISIONS:
            assert r["decision"] in POSITIVE_DECISIONS and m["hdi_low"] > 0
        if m["decision"] in NEGATIVE_DECISIONS:
            assert r["decision"] in NEGATIVE_DECISIONS and m["hdi_high"] < 0
        if m["decision"] == "improves":
            assert r["decision"] == "improves"


def test_the_first_screen_says_which_decisions_are_confirmatory() -> None:
    ev = _evidence({"beta": 0.6, "gamma": 0.3})
    fam = confirmatory_family([_row("a", "beta"), _row("b", "gamma")], ev)
    results = {"hypotheses": {"multiplicity": {"confirmatory": fam}}}
    text = confirmatory_finding(results)
    assert text is not None and "97.0% HDI" in text and "not supported as a family" in text
    assert "Every other decision on this page is exploratory" in text
    assert {"key": "confirmatory", "text": text} in findings(results)
    for sign, lo, hi in sign_claims(text):
        assert (lo > 0) if sign == "+" else (hi < 0)
    assert confirmatory_finding({"hypotheses": {"multiplicity": {"confirmatory": {"size": 0}}}}) is None


def test_a_member_whose_fit_failed_leaves_the_family_undecided() -> None:
    ev = _evidence({"beta": 0.6, "gamma": 0.6})
    rows = [{**_row("a", "beta"), "finding": True}, {**_row("b", "gamma"), "finding": False}]
    fam = confirmatory_family(rows, ev)
    assert fam["supported"] is None and "b" in fam["reason"]
    text = confirmatory_finding({"hypotheses": {"multiplicity": {"confirmatory": fam}}})
    assert "not decidable as a family" in text
    # the failed member's decision is not printed as one (issue 28.4); its estimate is
    member = text.split("b: ")[1].split(";")[0]
    assert member == "not decided (its fit failed the diagnostics gate)"
    assert not any(word in text.split("b: ")[1] for word in ("credibly positive", "improves,"))
    rows[1]["finding"] = True
    assert confirmatory_family(rows, ev)["supported"] is True
