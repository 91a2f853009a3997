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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from selfmodel import models as model_registry
from selfmodel.common.binomial import rate
from selfmodel.decisions.study_arms import EFFECT_MODEL
from selfmodel.fitting.sampling import SamplerSettings, for_model

Results = Mapping[str, Any]
#: the three checks of a decision's operating-characteristics study
CHECKS = ("null", "coverage", "misspecified")
#: Data sets a check needs when its study declares no target of its own: a null rate of 5%
#: known to about +-3 points (the pipeline study's target), a 94% coverage to about +-5.
DEFAULT_TARGET = {"null": 200, "misspecified": 200, "coverage": 100}
#: the sampler settings the studies must match to be "at the pipeline's settings"
SETTINGS_KEYS = ("draws", "tune", "chains", "target_accept")


@dataclass(frozen=True)
class Kind:
    """A kind of decision the report prints: its name, words, and where this run keeps it."""

    key: str
    label: str
    path: tuple[str, ...]


KINDS: tuple[Kind, ...] = (
    Kind("accuracy", "accuracy slope with scale, overall and per task", ("scale_effect",)),
    Kind("dprime", "d' slope with scale, overall and per task", ("sdt_effect", "sensitivity")),
    Kind("criterion", "criterion slope with scale, per task", ("sdt_effect", "bias")),
    Kind("training", "training effect: trained, held-out and per task (accuracy, d', criterion)",
         ("training_effect", "trained")),
    Kind("privileged", "privileged access (checkpoint vs base cross-predictions)",
         ("training_effect", "privileged_access", "mean")),
    Kind("contrasts", "condition and model contrasts (contrast model)", ("contrasts", "contrasts")),
    Kind("self_vs_other", "self vs other: the self advantage per model and task, its mean and slope on scale "
         "(rescoring, item-cluster bootstrap)", ("self_vs_other_rescored", "per_task")),
    Kind("confounds", "scale slope without the family that dominates the scale axis",
         ("confounds", "without_family")),
    Kind("within_between", "within- vs between-family slope", ("model_zoo", "within_between")),
    Kind("confidence_calibration_contrasts",
         "confidence-calibration differences between models or conditions (item bootstrap)",
         ("confidence_calibration_contrasts", "contrasts")),
    Kind("confirmatory", "the confirmatory family (Bonferroni-adjusted HDIs)",
         ("hypotheses", "multiplicity", "confirmatory")),
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


def _arm_at_defaults(a: Mapping[str, Any], study_settings: Mapping[str, Any] | None, effect: str) -> bool | None:
    """Whether an arm sampled as the pipeline samples its model.

    By what its records say they sampled with (``model_sampler``), else by the study's
    settings (records made before that was kept).
    """
    model = EFFECT_MODEL[effect]
    recorded = a.get("model_sampler") or []
    if recorded and not a.get("records_without_model_sampler"):
        return all(_at_defaults(m, model) for m in recorded)
    return _at_defaults(study_settings, model)


def _arm(name: str, check: str, n: int, target: int | None, rate: float | None,
         interval: Sequence[float] | None, at_settings: bool | None, measure: str,
         source: str) -> dict[str, Any]:
    target = target or DEFAULT_TARGET[check]
    return {"arm": name, "check": check, "n": n, "target_n": target,
            "complete": n >= target, "measure": measure, "rate": rate,
            "ci95": list(interval) if interval else None,
            "at_pipeline_settings": at_settings, "source": source}


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


def _pipeline_arms(studies: Studies, effect: str) -> list[dict[str, Any]]:
    pc = studies.pipeline or {}
    out = []
    for name, a in sorted((pc.get("arms") or {}).items()):
        parts = name.split(":")
        if parts[1] != effect:
            continue
        o = a.get("overall") or {}
        truth = a.get("truth", 0.0)
        # an arm with no records yet sampled nothing, at no settings
        at = _arm_at_defaults(a, pc.get("settings"), effect) if a.get("n") else None
        source = "validation/pipeline_operating_characteristics.py"
        # the study names each arm's check; summaries made before it did: by truth and variant
        check = a.get("check") or ("coverage" if truth else "misspecified" if len(parts) > 2 else "null")
        if check == "coverage":
            levels = "/".join(f"{100 * p:g}%" for p in a.get("hdi_prob") or [])
            adjusted = f"adjusted {levels} HDIs" if levels else "adjusted HDIs"  # no records: no level yet
            measure = (f"joint coverage of the members' true slopes by their {adjusted}"
                       if a.get("member_truths") else "94% HDI coverage")
            out.append(_arm(name, "coverage", a["n"], a["target_n"], o.get("hdi94_coverage"),
                            o.get("hdi94_coverage_ci"), at, measure, source))
        elif "family_error" in o:  # the confirmatory family: any member claiming a sign is an error
            levels = "/".join(f"{100 * p:g}%" for p in a.get("hdi_prob") or [])
            adjusted = f"adjusted {levels} HDI" if levels else "adjusted HDI"  # no records: no level yet
            out.append(_arm(name, check, a["n"], a["target_n"], o.get("family_error"),
                            o.get("family_error_ci"), at,
                            f"family-wise error: data sets in which some member's {adjusted} excludes 0", source))
        else:
            out.append(_arm(name, check, a["n"], a["target_n"], o.get("false_improves"),
                            o.get("false_improves_ci"), at, "false 'improves'", source))
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
    for name, a in sorted((study.get("arms") or {}).items()):
        at = all(_at_defaults(s, "training") for s in a.get("sampler") or [{}])
        qs = a.get("quantities") or {}
        if name == "truth":
            c = a["coverage_pooled"]
            out.append(_arm(f"training:{name}", "coverage", a["n"], a["target_n"], c["rate"], c["ci95"], at,
                            f"94% HDI coverage, {len(qs) - len(a.get('same_as') or {})} quantities pooled", source))
            continue
        same = a.get("same_as") or {}
        k, n, worst = _pooled(qs, "false_credible", same=same)
        out.append(_arm(f"training:{name}", "misspecified" if name == "misspecified" else "null", a["n"],
                        a["target_n"], k / n if n else None, rate(k, n)["ci95"], at,
                        f"false credible decisions per quantity, {len(qs) - len(same)} pooled ({worst}; a calibrated 94% "
                        "HDI gives about 6%)", source))
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
                 r.get("rate"), ci, _at_defaults(nc.get("sampler"), "training"), "false 'improves'",
                 "validation/training_null.py")]


def _privileged_arms(studies: Studies) -> list[dict[str, Any]]:
    cal = studies.privileged or {}
    if not cal.get("available"):
        return []
    out = []
    checks = {"null": "null", "truth": "coverage", "misspecified_null": "misspecified",
              "misspecified_truth": "coverage"}
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
        out.append(_arm(f"privileged:{name}", check, sets, None, k / n if n else None, None,
                        None, f"{what}, {len(fams)} families pooled",
                        "validation/privileged_access.py (bootstrap: no sampler)"))
    return out


def _contrast_arms(studies: Studies) -> list[dict[str, Any]]:
    cal = studies.contrasts or {}
    if not cal.get("available"):
        return []
    at = _at_defaults(cal.get("settings"), "contrast")
    out = []
    for name, a in sorted((cal.get("arms") or {}).items()):
        if name == "recovery":
            per = a.get("contrasts") or {}
            k = sum(c["covered"]["k"] for c in per.values())
            n = sum(c["n"] for c in per.values())
            out.append(_arm(f"contrast:{name}", "coverage", a.get("n_datasets", 0), None, k / n if n else None,
                            None, at, f"94% HDI coverage, {len(per)} contrasts pooled",
                            "validation/contrast_study.py"))
        else:
            g = a.get("any_credible_gated") or {}
            n = a.get("n_datasets", 0)
            out.append(_arm(f"contrast:{name}", "misspecified" if name == "misspecified" else "null", n, None,
                            g["k"] / n if n and "k" in g else None, g.get("ci95"), at,
                            "data sets with any credible contrast", "validation/contrast_study.py"))
    return out


def _confidence_calibration_arms(studies: Studies) -> list[dict[str, Any]]:
    cal = studies.confidence_calibration or {}
    if not cal.get("available"):
        return []
    out = []
    source = "validation/confidence_calibration_study.py (bootstrap: no sampler)"
    for name, a in sorted((cal.get("arms") or {}).items()):
        n = a.get("n_datasets", 0)
        if name == "truth":
            cov = (a.get("coverage") or {}).values()
            k, m = sum(c["covered"] for c in cov), sum(c["contrasts"] for c in cov)
            out.append(_arm(f"confidence_calibration:{name}", "coverage", n, None, k / m if m else None, None,
                            None, "94% interval coverage, every contrast and metric pooled", source))
        else:
            one, anyc = a.get("per_contrast_credible") or {}, a.get("any_credible") or {}
            per = one.get("n", 0) // n if n else 0
            family = f" ({100 * anyc['rate']:.0f}% of data sets have one or more)" if "rate" in anyc else ""
            out.append(_arm(f"confidence_calibration:{name}", "misspecified" if name == "misspecified" else "null",
                            n, None, one.get("rate"), one.get("ci95"), None,
                            f"credible contrasts, each of {per} per data set{family}", source))
    return out


def _self_vs_other_arms(studies: Studies) -> list[dict[str, Any]]:
    """The arms of ``validation/self_vs_other_study.py`` (bootstrap: no sampler)."""
    cal = studies.self_vs_other or {}
    if not cal.get("available"):
        return []
    out = []
    source = "validation/self_vs_other_study.py (bootstrap: no sampler)"
    for name, a in sorted((cal.get("arms") or {}).items()):
        task_level = {f"mean {k}": v for k, v in (a.get("means") or {}).items()}
        task_level |= {f"slope {k}": v for k, v in (a.get("slopes") or {}).items()}
        if a.get("check") == "coverage":
            k = sum(q["coverage"]["k"] for q in task_level.values())
            n = sum(q["coverage"]["n"] for q in task_level.values())
            out.append(_arm(f"self_vs_other:{name}", "coverage", a["n"], a["target_n"], k / n if n else None,
                            rate(k, n)["ci95"], None, f"95% interval coverage, {len(task_level)} task-level quantities "
                            "pooled", source))
            continue
        k, n, worst = _pooled(task_level, "positive", "negative")
        out.append(_arm(f"self_vs_other:{name}", a.get("check", "null"), a["n"], a["target_n"],
                        k / n if n else None, rate(k, n)["ci95"], None,
                        f"a direction declared per quantity, {len(task_level)} task-level quantities pooled "
                        f"({worst}; a calibrated 95% interval gives about 5%)", source))
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


def validation_map(results: Results, studies: Studies | None = None) -> list[dict[str, Any]]:
    """One row per kind of decision: printed in this run?, its arms, the checks it lacks.

    ``studies`` default to those the results' sections carry (:meth:`Studies.of`).

    ``status`` is ``checked`` (every check has an arm run to its target at the pipeline's
    settings or, for a bootstrap, with no sampler), ``partial`` (some check is missing,
    incomplete or at other settings) or ``none`` (no study).
    """
    studies = studies or Studies.of(results)
    rows = []
    for kind in KINDS:
        arms = _ARMS.get(kind.key, lambda _s: [])(studies)
        have = {a["check"] for a in arms if a["n"]}
        missing = [c for c in CHECKS if c not in have]
        full = {a["check"] for a in arms
                if a["n"] and a["complete"] and a["at_pipeline_settings"] is not False}
        status = "none" if not have else ("checked" if full >= set(CHECKS) else "partial")
        notes = []
        if any(a["at_pipeline_settings"] is False for a in arms):
            notes.append("some arms ran at other sampler settings than the pipeline's")
        if any(a["n"] and not a["complete"] for a in arms):
            notes.append("some arms are not yet run to their target")
        rows.append({"key": kind.key, "decision": kind.label,
                     "in_this_run": bool(_get(results, kind.path)),
                     "status": status, "missing": missing, "notes": notes, "arms": arms})
    return rows
