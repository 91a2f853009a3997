"""One sign rule, one level (issue 28.3): a sentence never claims a sign its interval denies.

The rule used to call a slope credibly positive when the one-sided P(slope > 0) exceeded
0.95 while the printed interval was the two-sided 94% HDI, so the first screen said
"credibly positive" beside refusal d' +0.21 [-0.01, +0.42]. Now the direction is credible
exactly when the printed HDI excludes 0 (``selfmodel.decisions.hypotheses.decide``), and a printed
bound that is not 0 never reads as 0 (``selfmodel.decisions.verdict.fmt_number``). The property test
builds results from many random posteriors (normal and skewed draws), renders the verdict's
sentences and checks every claim of a sign against the interval printed with it.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from selfmodel.decisions.hypotheses import DecisionRule, decide
from selfmodel.decisions.verdict import findings
from selfmodel.records.contract import NEGATIVE_DECISIONS, POSITIVE_DECISIONS

#: Phrases of the verdict that claim a sign (positive, negative).
POSITIVE = re.compile(r"credibly positive|credibly rises|(?<!whether )\w* ?rises with scale|more cautious")
NEGATIVE = re.compile(r"credibly negative|credibly falls|(?<!rises or )falls with scale|more ready to say yes")
NUMBER = r"([+-]?(?:\d+\.?\d*(?:e[+-]?\d+)?|n/a))"
INTERVAL = re.compile(rf"HDI {NUMBER} to {NUMBER}|\[{NUMBER}, {NUMBER}\]")


def _draws(seed: int, mean: float, sd: float, skew: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(4000)
    if skew:  # a skewed posterior: standardised gamma, so the HDI is not symmetric
        g = rng.gamma(1.0 / skew**2, 1.0, 4000)
        z = np.sign(skew) * (g - g.mean()) / g.std()
    return mean + sd * z


def _effect(seed: int, mean: float, sd: float, skew: float, rope: float) -> dict:
    return {**decide(_draws(seed, mean, sd, skew), DecisionRule(rope=rope), n_models=10), "rope": rope}


effects = st.tuples(st.floats(-0.6, 0.6), st.floats(0.003, 0.4), st.sampled_from([0.0, 0.5, -0.5, 1.5]))


def _results(seed: int, es: list[tuple[float, float, float]], rope: float) -> dict:
    it = iter(range(100))
    tasks = ["refusal", "word_association"]

    def eff(k: int) -> dict:
        return _effect(seed + next(it), *es[k % len(es)], rope)

    effect = {**eff(0), "units": "logits per 10x", "finding": True, "fit_model": "scale",
         "per_task": {t: eff(1 + i) for i, t in enumerate(tasks)}}
    sens = {**eff(3), "finding": True, "per_task": {t: eff(4 + i) for i, t in enumerate(tasks)}}
    bias = {**eff(6), "finding": True, "per_task": {t: eff(7 + i) for i, t in enumerate(tasks)}}
    members = [{**eff(9 + i), "name": f"h{i}", "predicted": "improves"} for i in range(2)]
    for m in members:
        m["supported"] = m["decision"] == "improves"
    conf = {"size": 2, "hdi_prob": 0.97, "members": members,
            "supported": all(m["supported"] for m in members), "joint": []}
    return {"scale_effect": effect, "sdt_effect": {"fitted": True, "sensitivity": sens, "bias": bias},
            "hypotheses": {"multiplicity": {"confirmatory": conf}},
            "diagnostics": {"passed": True},
            "model_zoo": {"scale": {"fitted": True, "diagnostics": {"passed": True}},
                          "sdt": {"fitted": True, "diagnostics": {"passed": True}}}}


def sign_claims(text: str) -> list[tuple[str, float, float]]:
    """Every (claimed sign, printed low, printed high) in ``text``: each interval is read with
    the nearest sign phrase before it in its own clause (clauses end at ';' or a sentence)."""
    out = []
    for clause in re.split(r";\s|\.\s+(?=[A-Z])", text):
        marks = sorted([(m.end(), "+") for m in POSITIVE.finditer(clause)]
                       + [(m.end(), "-") for m in NEGATIVE.finditer(clause)])
        for m in INTERVAL.finditer(clause):
            before = [s for end, s in marks if end <= m.start()]
            if not before:
                continue
            lo, hi = (g for g in m.groups() if g is not None)
            out.append((before[-1], float(lo), float(hi)))
    return out


def test_the_reported_case_is_no_longer_credibly_positive() -> None:
    """The issue's numbers: mean +0.21, HDI about [-0.01, +0.42], P(> 0) about 0.97."""
    r = decide(_draws(0, 0.21, 0.115, 0.0), DecisionRule(), n_models=10)
    assert r["prob_positive"] > 0.95 and r["hdi_low"] < 0
    assert r["decision"] == "no_credible_effect"


@settings(max_examples=150, deadline=None)
@given(mean=st.floats(-0.6, 0.6), sd=st.floats(0.003, 0.4), skew=st.sampled_from([0.0, 0.5, -0.5, 1.5]),
       rope=st.sampled_from([0.0, 0.05, 0.1]), seed=st.integers(0, 10**6))
@example(mean=0.21, sd=0.115, skew=0.0, rope=0.1, seed=0)
def test_a_credible_sign_is_an_hdi_that_excludes_zero(mean: float, sd: float, skew: float,
                                                      rope: float, seed: int) -> None:
    r = _effect(seed, mean, sd, skew, rope)
    if r["decision"] in POSITIVE_DECISIONS:
        assert r["hdi_low"] > 0
    elif r["decision"] in NEGATIVE_DECISIONS:
        assert r["hdi_high"] < 0
    elif r["decision"] == "no_credible_effect":
        assert r["hdi_low"] <= 0 <= r["hdi_high"]
    if r["hdi_low"] > max(rope, 0):
        assert r["decision"] == "improves"


@settings(max_examples=60, deadline=None)
@given(es=st.lists(effects, min_size=3, max_size=9), rope=st.sampled_from([0.0, 0.1]),
       seed=st.integers(0, 10**6))
@example(es=[(0.21, 0.115, 0.0), (0.004, 0.0015, 0.0), (-0.3, 0.1, 0.0)], rope=0.0, seed=0)
def test_no_sentence_claims_a_sign_its_printed_interval_denies(es: list, rope: float, seed: int) -> None:
    results = _results(seed, es, rope)
    claims = [c for f in findings(results) for c in sign_claims(f["text"])]
    for sign, lo, hi in claims:
        if sign == "+":
            assert lo > 0, (sign, lo, hi, findings(results))
        else:
            assert hi < 0, (sign, lo, hi, findings(results))


def test_the_parser_sees_the_claims() -> None:
    """The property above is not vacuous: sign claims are found and read with their interval."""
    results = _results(1, [(0.4, 0.05, 0.0), (-0.4, 0.05, 0.0), (0.0, 0.3, 0.0)], 0.1)
    claims = [c for f in findings(results) for c in sign_claims(f["text"])]
    assert {s for s, _, _ in claims} == {"+", "-"}
    assert len(claims) >= 4
    with pytest.raises(AssertionError):  # a claim beside an interval through 0 is caught
        for sign, lo, _hi in sign_claims("d' slope: credibly positive in refusal (+0.21 [-0.01, +0.42])"):
            assert sign == "+" and lo > 0
