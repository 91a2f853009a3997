"""The validation map: which of the report's decisions have an operating-characteristics study, and of what kind.

A decision word in the report ("improves", "credibly positive", "worsens" ...) is only as good
as the rule behind it on data with known truth: its operating characteristics (error rates
and coverage under simulated truth). Seven shipped studies measure them, each for
some decisions: the pipeline-settings study of the scale slopes
(``validation/pipeline_operating_characteristics.py``, ``results.json`` ``operating_characteristics.pipeline``),
the training null study (``validation/training_null.py``, ``training_effect.null_operating_characteristics``),
the training study at the pipeline's settings (``validation/training_study.py``,
``training_effect.operating_characteristics``; once shipped it replaces the null study in the map), the
privileged-access study (``validation/privileged_access.py``,
``training_effect.privileged_access.operating_characteristics``), the contrast study
(``validation/contrast_study.py``, ``contrasts.operating_characteristics``), the
confidence-calibration study (``validation/confidence_calibration_study.py``, package data only) and the
self-vs-other study (``validation/self_vs_other_study.py``,
``self_vs_other_rescored.operating_characteristics``).

:func:`validation_map` is a pure function of the results dictionary and of those seven
studies' summaries (:func:`Studies`; the pipeline passes the shipped ones, so a kind of
decision this run did not make still shows its study): for every kind of
decision the report can print, whether this run printed it, and which of the three checks
its study has (``null``: how often the rule declares an effect that is not there;
``coverage``: 94% HDI coverage at known non-zero truths; ``misspecified``: the null rate on
data the model does not describe), each with its data sets, its target and whether it ran at
the pipeline's own sampler settings. A check no study makes is listed in ``missing``; a kind
with no study at all says so. The report prints the map as it stands
(``#sec-operating-characteristics``).

Each arm is held to its target (``meets_target``, from the arm's own numbers; the rules are
``selfmodel.decisions.targets.target_check``'s and ``docs/decisions.md``'s), and a kind is ``checked`` only when every
arm ran to its data sets, at the pipeline's recorded settings, and met its target; otherwise
its ``status`` says which is not so (:data:`STATUSES`), and ``status_words`` says it in a
sentence with the figures, for the first screen (``selfmodel.decisions.verdict``; the rules and
the words are in ``selfmodel.decisions.targets``, which the report may import).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from selfmodel import models as model_registry
from selfmodel.common.binomial import rate
from selfmodel.decisions.study_arms import EFFECT_MODEL
from selfmodel.decisions.targets import (
    coverage_range,
    status_words,
    target_check,
    target_words,
)
from selfmodel.fitting.sampling import SamplerSettings, for_model

Results = Mapping[str, Any]
#: the three checks of a decision's operating-characteristics study
CHECKS = ("null", "coverage", "misspecified")
#: Data sets a check needs when its study declares no target of its own: a null rate of 5%
#: known to about +-3 points (the pipeline study's target), a 94% coverage to about +-5.
DEFAULT_TARGET = {"null": 200, "misspecified": 200, "coverage": 100}
#: the sampler settings the studies must match to be "at the pipeline's settings"
SETTINGS_KEYS = ("draws", "tune", "chains", "target_accept")
#: A kind's status, first that applies: no arm; an arm run to its data sets missed its target;
#: an arm sampled at other settings than the pipeline's, or whose records do not record their
#: settings or versions; a check with no arm, or an arm short of its data sets; an arm with no
#: target to meet; else every arm complete, at the pipeline's settings and within its target.
STATUSES = ("none", "missed", "not_at_settings", "partial", "no_target", "checked")
#: The largest false ``improves`` rate when a study declares none (the pipeline study's bound).
MAX_FALSE_IMPROVES = 0.05


@dataclass(frozen=True)
class Kind:
    """A kind of decision the report prints: its name, words, and where this run keeps it."""

    key: str
    label: str
    path: tuple[str, ...]
    #: the kind in a few words, for the first screen
    short: str = ""


KINDS: tuple[Kind, ...] = (
    Kind("accuracy", "accuracy slope with scale, overall and per task", ("scale_effect",), "accuracy slope"),
    Kind("dprime", "d' slope with scale, overall and per task", ("sdt_effect", "sensitivity"), "d' slope"),
    Kind("criterion", "criterion slope with scale, per task", ("sdt_effect", "bias"), "criterion slope"),
    Kind("training", "training effect: trained, held-out and per task (accuracy, d', criterion)",
         ("training_effect", "trained"), "training effects"),
    Kind("privileged", "privileged access (checkpoint vs base cross-predictions)",
         ("training_effect", "privileged_access", "mean"), "privileged access"),
    Kind("contrasts", "condition and model contrasts (contrast model)", ("contrasts", "contrasts"), "contrasts"),
    Kind("self_vs_other", "self vs other: the self advantage per model and task, its mean and slope on scale "
         "(rescoring, item-cluster bootstrap)", ("self_vs_other_rescored", "per_task"), "self vs other"),
    Kind("confounds", "scale slope without the family that dominates the scale axis",
         ("confounds", "without_family"), "slope without the largest family"),
    Kind("within_between", "within- vs between-family slope", ("model_zoo", "within_between"), "within/between slopes"),
    Kind("confidence_calibration_contrasts",
         "confidence-calibration differences between models or conditions (item bootstrap)",
         ("confidence_calibration_contrasts", "contrasts"), "confidence-calibration contrasts"),
    Kind("confirmatory", "the confirmatory family (Bonferroni-adjusted HDIs)",
         ("hypotheses", "multiplicity", "confirmatory"), "confirmatory family"),
)


def _get(results: Results, path: Sequence[str]) -> Any:
    node: Any = results
    for k in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(k)
    return node


def _at_defaults(settings: Mapping[str, Any] | None, model: str | None = None) -> bool | None:
    """Whether ``settings`` are the pipeline's defaults (for ``model``: with its ``SPEC.sampling``)."""
    if not settings:
        return None
    want = SamplerSettings()
    if model is not None:
        want = for_model(want, model_registry.get(model).SPEC.sampling)
    return all(settings.get(k) == asdict(want)[k] for k in SETTINGS_KEYS)


def _pipeline_settings(a: Mapping[str, Any], study_settings: Mapping[str, Any] | None,
                       effect: str) -> dict[str, Any]:
    """How an arm of the pipeline study sampled, against how the pipeline samples its model.

    By what its records say they sampled with (``model_sampler``, one entry per distinct
    settings) and which stack fitted them (``versions``). A record that does not say (made
    before each record kept it) is counted in ``records_without_settings`` or
    ``records_without_versions``; such a record ran at the study's declared ``settings``, so it
    counts as at other settings when those are not the pipeline's for the model, and as not
    recorded otherwise. ``records_at_other_settings`` is ``None`` when some recorded settings
    are the pipeline's and some are not (the summary does not say how many records each).
    """
    n = int(a.get("n") or 0)
    model = EFFECT_MODEL[effect]
    recorded = a.get("model_sampler") or []
    without = int(a.get("records_without_model_sampler", 0 if recorded else n))
    no_versions = int(a.get("records_without_versions", 0 if a.get("versions") else n))
    other = [m for m in recorded if not _at_defaults(m, model)]
    at_other: int | None = 0 if not other else n - without if len(other) == len(recorded) else None
    if without and _at_defaults(study_settings, model) is False and at_other is not None:
        at_other += without
    counts = {"records_at_other_settings": at_other, "records_without_settings": without,
              "records_without_versions": no_versions}
    if not n:  # an arm with no records yet sampled nothing, at no settings
        return {"settings": None, "at": None, **counts}
    if at_other is None or at_other:
        return {"settings": "other", "at": False, **counts}
    if without or no_versions:
        return {"settings": "not_recorded", "at": None, **counts}
    return {"settings": "pipeline", "at": True, **counts}


def _study_settings(at: bool | None, *, sampler: bool = True) -> dict[str, Any]:
    """The settings of an arm of a study that keeps them per study or per arm (no record counts)."""
    word = "no_sampler" if not sampler else {True: "pipeline", False: "other", None: "not_recorded"}[at]
    return {"settings": word, "at": at if sampler else None}


def _arm(name: str, check: str, n: int, target: int | None, rate: float | None,
         interval: Sequence[float] | None, at_settings: Mapping[str, Any], measure: str,
         source: str, targets: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """An arm of the map: its figures, its targets (``targets``, ``meets_target``) and settings.

    ``at_settings`` is :func:`_pipeline_settings`' or :func:`_study_settings`' answer.
    ``meets_target`` is ``False`` when some target is missed, ``True`` when every target is
    met, ``None`` when the arm has no target or no figure to hold to one.
    """
    target = target or DEFAULT_TARGET[check]
    met = [t["met"] for t in targets]
    meets = False if False in met else (True if met and None not in met else None)
    counts = {k: at_settings[k] for k in ("records_at_other_settings", "records_without_settings",
                                          "records_without_versions") if k in at_settings}
    return {"arm": name, "check": check, "n": n, "target_n": target,
            "complete": n >= target, "measure": measure, "rate": rate,
            "ci95": list(interval) if interval else None,
            "at_pipeline_settings": at_settings["at"], "settings": at_settings["settings"], **counts,
            "targets": [dict(t) for t in targets], "meets_target": meets, "source": source}


@dataclass(frozen=True)
class Studies:
    """The shipped studies' summaries (``None`` or ``{"available": False}`` when absent)."""

    pipeline: Mapping[str, Any] | None = None
    training_null: Mapping[str, Any] | None = None
    privileged: Mapping[str, Any] | None = None
    contrasts: Mapping[str, Any] | None = None
    confidence_calibration: Mapping[str, Any] | None = None
    training: Mapping[str, Any] | None = None
    self_vs_other: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, results: Results) -> Studies:
        """The studies as the results' own sections carry them."""
        return cls(_get(results, ("operating_characteristics", "pipeline")),
                   _get(results, ("training_effect", "null_operating_characteristics")),
                   _get(results, ("training_effect", "privileged_access", "operating_characteristics")),
                   _get(results, ("contrasts", "operating_characteristics")),
                   _get(results, ("confidence_calibration_contrasts", "operating_characteristics")),
                   _get(results, ("training_effect", "operating_characteristics")),
                   _get(results, ("self_vs_other_rescored", "operating_characteristics")))


def _pipeline_targets(o: Mapping[str, Any], study_targets: Mapping[str, Any], coverage_measure: str,
                      false_word: str) -> list[dict[str, Any]]:
    """The targets of one arm of the pipeline study, as the study declares them.

    The study's ``targets``, each component's ``coverage_range`` and the family's
    ``max_family_error``: the coverage of the truth always, the false rate and the family-wise
    error where the arm has them.
    """
    cov = o.get("coverage_range") or study_targets.get("hdi94_coverage")
    out = [target_check(coverage_measure, o.get("hdi94_coverage"), o.get("hdi94_coverage_ci"),
                        within=cov or coverage_range(0.94), declared_by="the study" if cov else "the map")]
    if o.get("false_improves") is not None:
        bound = study_targets.get("max_false_improves")
        out.append(target_check(false_word, o["false_improves"], o.get("false_improves_ci"),
                                at_most=MAX_FALSE_IMPROVES if bound is None else bound,
                                declared_by="the study" if bound is not None else "the map"))
    if o.get("family_error") is not None:
        out.append(target_check("family-wise error", o["family_error"], o.get("family_error_ci"),
                                at_most=o.get("max_family_error", 0.06)))
    return out


def _pipeline_arms(studies: Studies, effect: str) -> list[dict[str, Any]]:
    pc = studies.pipeline or {}
    out = []
    for name, a in sorted((pc.get("arms") or {}).items()):
        parts = name.split(":")
        if parts[1] != effect:
            continue
        o = a.get("overall") or {}
        truth = a.get("truth", 0.0)
        at = _pipeline_settings(a, pc.get("settings"), effect)
        family = "family_error" in o or effect == "confirmatory"
        false_word = "false 'supported'" if family else "false 'improves'"
        joint = "joint coverage of the members' true slopes" if family else "94% HDI coverage of the true slope"
        targets = _pipeline_targets(o, pc.get("targets") or {}, joint, false_word) if a.get("n") else []
        source = "validation/pipeline_operating_characteristics.py"
        # the study names each arm's check; summaries made before it did: by truth and variant
        check = a.get("check") or ("coverage" if truth else "misspecified" if len(parts) > 2 else "null")
        if check == "coverage":
            levels = "/".join(f"{100 * p:g}%" for p in a.get("hdi_prob") or [])
            adjusted = f"adjusted {levels} HDIs" if levels else "adjusted HDIs"  # no records: no level yet
            measure = (f"joint coverage of the members' true slopes by their {adjusted}"
                       if a.get("member_truths") else "94% HDI coverage")
            out.append(_arm(name, "coverage", a["n"], a["target_n"], o.get("hdi94_coverage"),
                            o.get("hdi94_coverage_ci"), at, measure, source, targets))
        elif "family_error" in o:  # the confirmatory family: any member claiming a sign is an error
            levels = "/".join(f"{100 * p:g}%" for p in a.get("hdi_prob") or [])
            adjusted = f"adjusted {levels} HDI" if levels else "adjusted HDI"  # no records: no level yet
            out.append(_arm(name, check, a["n"], a["target_n"], o.get("family_error"),
                            o.get("family_error_ci"), at,
                            f"family-wise error: data sets in which some member's {adjusted} excludes 0", source,
                            targets))
        else:
            out.append(_arm(name, check, a["n"], a["target_n"], o.get("false_improves"),
                            o.get("false_improves_ci"), at, "false 'improves'", source, targets))
    return out


def _pooled(quantities: Mapping[str, Mapping[str, Any]], *keys: str,
            same: Mapping[str, str] | None = None) -> tuple[int, int, str]:
    """Counts ``keys`` summed over every quantity (k, n) and the worst quantity's name and rate.

    The pooled rate is the rate of one decision, as the report prints each; its interval
    treats the quantities of a data set as independent, which they are not. A quantity that
    is another one (``same``: a mean over a single task is that task) is counted once.
    """
    k = n = 0
    worst, w_rate = "", -1.0
    for name, q in sorted(quantities.items()):
        if name in (same or {}):
            continue
        qk, qn = sum(q[key]["k"] for key in keys), q[keys[0]]["n"]
        k, n = k + qk, n + qn
        if qn and qk / qn > w_rate:
            worst, w_rate = name, qk / qn
    if w_rate <= 0:
        return k, n, "none in any quantity"
    return k, n, f"worst: {worst.replace(':', ' ')} {100 * w_rate:.1f}%"


def _training_study_arms(study: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The arms of ``validation/training_study.py`` (independent generator, pipeline settings)."""
    out = []
    source = "validation/training_study.py"
    level = (study.get("rule") or {}).get("hdi_prob", 0.94)
    for name, a in sorted((study.get("arms") or {}).items()):
        sampled = [_at_defaults(s, "training") for s in a.get("sampler") or []]
        at = None if not sampled or not a.get("versions") or None in sampled else all(sampled)
        qs = a.get("quantities") or {}
        c = a.get("coverage_pooled") or {}
        same = a.get("same_as") or {}
        cov = target_check(f"{level:.0%} HDI coverage of the true gains, pooled", c.get("rate"), c.get("ci95"),
                           within=coverage_range(level), declared_by="the map")
        if name == "truth":
            out.append(_arm(f"training:{name}", "coverage", a["n"], a["target_n"], c["rate"], c["ci95"],
                            _study_settings(at), f"94% HDI coverage, {len(qs) - len(same)} quantities pooled",
                            source, [cov]))
            continue
        k, n, worst = _pooled(qs, "false_credible", same=same)
        r = rate(k, n)
        false = target_check("false credible decisions per quantity", r["rate"], r["ci95"], at_most=round(1 - level, 4),
                             declared_by="the map")
        out.append(_arm(f"training:{name}", "misspecified" if name == "misspecified" else "null", a["n"],
                        a["target_n"], r["rate"], r["ci95"], _study_settings(at),
                        f"false credible decisions per quantity, {len(qs) - len(same)} pooled ({worst}; a calibrated 94% "
                        "HDI gives about 6%)", source, [false] + ([cov] if c else [])))
    return out


def _training_arms(studies: Studies) -> list[dict[str, Any]]:
    if (studies.training or {}).get("available"):
        return _training_study_arms(studies.training or {})
    nc = studies.training_null or {}
    if not nc.get("available"):
        return []
    r = (nc.get("rates") or {}).get("accuracy:trained") or {}
    ci = [r["ci_low"], r["ci_high"]] if "ci_low" in r else None
    return [_arm("training_null (accuracy, trained)", "null", nc.get("n_datasets", 0), None,
                 r.get("rate"), ci, _study_settings(_at_defaults(nc.get("sampler"), "training")), "false 'improves'",
                 "validation/training_null.py",
                 [target_check("false 'improves'", r.get("rate"), ci, at_most=MAX_FALSE_IMPROVES,
                               declared_by="the map")])]


def _privileged_arms(studies: Studies) -> list[dict[str, Any]]:
    cal = studies.privileged or {}
    if not cal.get("available"):
        return []
    out = []
    checks = {"null": "null", "truth": "coverage", "misspecified_null": "misspecified",
              "misspecified_truth": "coverage"}
    level = (cal.get("rule") or {}).get("hdi_prob", 0.94)
    for name, a in sorted((cal.get("arms") or {}).items()):
        check = checks.get(name)
        if check is None:
            continue
        fams = a.get("families") or {}
        key = "coverage" if check == "coverage" else "positive"
        k = sum((f.get(key) or {}).get("k", 0) for f in fams.values())
        n = sum((f.get(key) or {}).get("n", 0) for f in fams.values())
        sets = max(((f.get(key) or {}).get("n", 0) for f in fams.values()), default=0)
        what = "94% interval coverage" if check == "coverage" else "positive decisions"
        r = rate(k, n)
        # a positive decision is one side of a 94% interval: about 3% when calibrated
        target = (target_check(what, r["rate"], r["ci95"], within=coverage_range(level), declared_by="the map")
                  if check == "coverage" else
                  target_check(what, r["rate"], r["ci95"], at_most=round((1 - level) / 2, 4), declared_by="the map"))
        out.append(_arm(f"privileged:{name}", check, sets, None, r["rate"], None,
                        _study_settings(None, sampler=False), f"{what}, {len(fams)} families pooled",
                        "validation/privileged_access.py (bootstrap: no sampler)", [target]))
    return out


def _contrast_arms(studies: Studies) -> list[dict[str, Any]]:
    cal = studies.contrasts or {}
    if not cal.get("available"):
        return []
    at = _at_defaults(cal.get("settings"), "contrast")
    settings = _study_settings(at if cal.get("versions") or at is False else None)
    level = (cal.get("rule") or {}).get("hdi_prob", 0.94)
    out = []
    for name, a in sorted((cal.get("arms") or {}).items()):
        if name == "recovery":
            per = a.get("contrasts") or {}
            k = sum(c["covered"]["k"] for c in per.values())
            n = sum(c["n"] for c in per.values())
            r = rate(k, n)
            out.append(_arm(f"contrast:{name}", "coverage", a.get("n_datasets", 0), None, r["rate"],
                            None, settings, f"94% HDI coverage, {len(per)} contrasts pooled",
                            "validation/contrast_study.py",
                            [target_check("94% HDI coverage, contrasts pooled", r["rate"], r["ci95"],
                                          within=coverage_range(level), declared_by="the map")]))
        else:
            g = a.get("any_credible_gated") or {}
            n = a.get("n_datasets", 0)
            value = g["k"] / n if n and "k" in g else None
            # the page's declared level for a block of decisions, as the confirmatory family's
            out.append(_arm(f"contrast:{name}", "misspecified" if name == "misspecified" else "null", n, None,
                            value, g.get("ci95"), settings,
                            "data sets with any credible contrast", "validation/contrast_study.py",
                            [target_check("data sets with any credible contrast", value, g.get("ci95"),
                                          at_most=round(1 - level, 4), declared_by="the map")]))
    return out


def _confidence_calibration_arms(studies: Studies) -> list[dict[str, Any]]:
    cal = studies.confidence_calibration or {}
    if not cal.get("available"):
        return []
    out = []
    source = "validation/confidence_calibration_study.py (bootstrap: no sampler)"
    level = (cal.get("rule") or {}).get("hdi_prob", 0.94)
    none = _study_settings(None, sampler=False)
    for name, a in sorted((cal.get("arms") or {}).items()):
        n = a.get("n_datasets", 0)
        if name == "truth":
            cov = (a.get("coverage") or {}).values()
            k, m = sum(c["covered"] for c in cov), sum(c["contrasts"] for c in cov)
            r = rate(k, m)
            out.append(_arm(f"confidence_calibration:{name}", "coverage", n, None, r["rate"], None,
                            none, "94% interval coverage, every contrast and metric pooled", source,
                            [target_check("94% interval coverage, pooled", r["rate"], r["ci95"],
                                          within=coverage_range(level), declared_by="the map")]))
        else:
            one, anyc = a.get("per_contrast_credible") or {}, a.get("any_credible") or {}
            per = one.get("n", 0) // n if n else 0
            family = f" ({100 * anyc['rate']:.0f}% of data sets have one or more)" if "rate" in anyc else ""
            out.append(_arm(f"confidence_calibration:{name}", "misspecified" if name == "misspecified" else "null",
                            n, None, one.get("rate"), one.get("ci95"), none,
                            f"credible contrasts, each of {per} per data set{family}", source,
                            [target_check("credible contrasts per contrast", one.get("rate"), one.get("ci95"),
                                          at_most=round(1 - level, 4), declared_by="the map")]))
    return out


def _self_vs_other_arms(studies: Studies) -> list[dict[str, Any]]:
    """The arms of ``validation/self_vs_other_study.py`` (bootstrap: no sampler)."""
    cal = studies.self_vs_other or {}
    if not cal.get("available"):
        return []
    out = []
    source = "validation/self_vs_other_study.py (bootstrap: no sampler)"
    level = cal.get("interval_level") or 0.95
    none = _study_settings(None, sampler=False)
    for name, a in sorted((cal.get("arms") or {}).items()):
        task_level = {f"mean {k}": v for k, v in (a.get("means") or {}).items()}
        task_level |= {f"slope {k}": v for k, v in (a.get("slopes") or {}).items()}
        kc = sum(q["coverage"]["k"] for q in task_level.values() if "coverage" in q)
        nc = sum(q["coverage"]["n"] for q in task_level.values() if "coverage" in q)
        c = rate(kc, nc)
        cov = target_check(f"{level:.0%} interval coverage, pooled", c["rate"], c["ci95"],
                           within=coverage_range(level), declared_by="the map")
        if a.get("check") == "coverage":
            out.append(_arm(f"self_vs_other:{name}", "coverage", a["n"], a["target_n"], c["rate"],
                            c["ci95"], none, f"95% interval coverage, {len(task_level)} task-level quantities "
                            "pooled", source, [cov]))
            continue
        k, n, worst = _pooled(task_level, "positive", "negative")
        r = rate(k, n)
        false = target_check("a direction declared per quantity", r["rate"], r["ci95"], at_most=round(1 - level, 4),
                             declared_by="the map")
        out.append(_arm(f"self_vs_other:{name}", a.get("check", "null"), a["n"], a["target_n"],
                        r["rate"], r["ci95"], none,
                        f"a direction declared per quantity, {len(task_level)} task-level quantities pooled "
                        f"({worst}; a calibrated 95% interval gives about 5%)", source, [false] + ([cov] if nc else [])))
    return out


_ARMS = {
    "accuracy": lambda r: _pipeline_arms(r, "accuracy"),
    "dprime": lambda r: _pipeline_arms(r, "dprime"),
    "criterion": lambda r: _pipeline_arms(r, "criterion"),
    "within_between": lambda r: _pipeline_arms(r, "within") + _pipeline_arms(r, "between"),
    "confirmatory": lambda r: _pipeline_arms(r, "confirmatory"),
    "confounds": lambda r: _pipeline_arms(r, "without_family"),
    "training": _training_arms,
    "privileged": _privileged_arms,
    "contrasts": _contrast_arms,
    "confidence_calibration_contrasts": _confidence_calibration_arms,
    "self_vs_other": _self_vs_other_arms,
}


def _missed(arm: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The targets an arm missed, each with its figures and in words (``missed_arms``)."""
    return [{"arm": arm["arm"], "check": arm["check"], "measure": t["measure"], "rate": t["value"],
             "ci95": t["ci95"], "target": {k: t[k] for k in ("at_most", "within") if k in t},
             "words": f"the {arm['check']} arm {arm['arm']} missed its target ({target_words(t)})"}
            for t in arm["targets"] if t["met"] is False]


def _settings_words(arm: Mapping[str, Any]) -> str:
    """Why an arm is not at the pipeline's settings, with its counts of records."""
    n, other = arm["n"], arm.get("records_at_other_settings")
    parts = []
    if other is None or other:
        parts.append(f"{'some' if other is None else other} of {n} records at other sampler settings than the "
                     "pipeline's for its model")
    if arm.get("records_without_settings"):
        parts.append(f"{arm['records_without_settings']} of {n} records do not record their sampler settings")
    if arm.get("records_without_versions"):
        parts.append(f"{arm['records_without_versions']} of {n} records do not record their package versions")
    if not parts:
        parts.append("its settings are not recorded" if arm["settings"] == "not_recorded"
                     else "it ran at other sampler settings than the pipeline's")
    return f"the {arm['check']} arm {arm['arm']}: " + ", ".join(parts)


def _status(arms: Sequence[Mapping[str, Any]], missing: Sequence[str]) -> tuple[str, list[str]]:
    """A kind's status (:data:`STATUSES`) and every reason it is not ``checked``, in words."""
    sampled = [a for a in arms if a["n"]]
    if not sampled:
        return "none", []
    missed = [m["words"] for a in sampled if a["complete"] for m in _missed(a)]
    settings = [_settings_words(a) for a in sampled if a["settings"] in ("other", "not_recorded")]
    short = ([f"no {c} arm" for c in missing]
             + [f"the {a['check']} arm {a['arm']} has {a['n']} of its {a['target_n']} data sets"
                for a in sampled if not a["complete"]])
    untargeted = [f"the {a['check']} arm {a['arm']} has no target to meet" for a in sampled
                  if a["complete"] and a["meets_target"] is None]
    reasons = missed + settings + short + untargeted
    for status, why in (("missed", missed), ("not_at_settings", settings), ("partial", short),
                        ("no_target", untargeted)):
        if why:
            return status, reasons
    return "checked", reasons


def validation_map(results: Results, studies: Studies | None = None) -> list[dict[str, Any]]:
    """One row per kind of decision: printed in this run?, its arms, the checks it lacks, its status.

    ``studies`` default to those the results' sections carry (:meth:`Studies.of`).

    ``status`` (:data:`STATUSES`) is ``checked`` only when every arm is complete, at the
    pipeline's recorded settings (or a bootstrap, with no sampler) and meets its target;
    ``reasons`` lists every reason it is not, ``missed_arms`` the missed targets with their
    figures, ``status_words`` says it in a sentence.
    """
    studies = studies or Studies.of(results)
    rows = []
    for kind in KINDS:
        arms = _ARMS.get(kind.key, lambda _s: [])(studies)
        have = {a["check"] for a in arms if a["n"]}
        missing = [c for c in CHECKS if c not in have]
        status, reasons = _status(arms, missing)
        notes = []
        if any(a["at_pipeline_settings"] is False for a in arms):
            notes.append("some arms ran at other sampler settings than the pipeline's")
        if any(a["settings"] == "not_recorded" for a in arms if a["n"]):
            notes.append("some arms' records do not record their sampler settings or versions")
        if any(a["n"] and not a["complete"] for a in arms):
            notes.append("some arms are not yet run to their target")
        if any(a["meets_target"] is False for a in arms if a["n"]):
            notes.append("some arms missed their targets")
        counts = {k: (None if any(a.get(k, 0) is None for a in arms) else sum(a.get(k, 0) for a in arms))
                  for k in ("records_at_other_settings", "records_without_settings", "records_without_versions")}
        row = {"key": kind.key, "decision": kind.label,
               "in_this_run": bool(_get(results, kind.path)),
               "status": status, "missing": missing, "notes": notes, "reasons": reasons,
               "short": kind.short or kind.label,
               "missed_arms": [m for a in arms if a["n"] and a["complete"] for m in _missed(a)],
               **counts, "arms": arms}
        row["status_words"] = status_words(row)
        rows.append(row)
    return rows
