"""The status sentences a run leads with, each chosen by code from the numbers.

A run's first lines (``results.json`` ``status``, the command line and the report's first
screen) say, in this order and only when it applies:

``low_yield``
    fewer than :data:`LOW_YIELD_SHARE` of the records read were kept, with the top
    quarantine reasons (the run stops before this unless ``--allow-low-yield``); rows a
    records mapping's filter left out (``records_excluded``) are not counted as read here;
``exploratory``
    the sampler ran the exploratory preset (``--preset exploratory``): "Exploratory
    settings: not for findings";
``not_fitted``
    no model was fitted, and why (instead of "Diagnostics failed (R-hat n/a ...)"); when
    the contrast model was fitted instead, that the *scale* model was not;
``contrasts``
    what the data can decide when the scale question is not estimable: each decided
    contrast between conditions, models and tasks (``analysis/analyses/contrasts.py``);
``diagnostics``
    a fitted model failed its sampler checks (a real failure, or one expected at the
    exploratory settings);
``correct_only``
    records that give only ``correct`` were read as *self-prediction* right or wrong;
``repeats``
    repeats told apart only by an ignored column (map it to ``sample``);
``carried``
    the accounting of the ingests whose ``records.parquet`` was read is part of the counts
    (their quarantine is in the ``quarantine.parquet`` beside each);
``carried_not_trusted``
    an ``ingest.json`` beside a ``records.parquet`` read does not describe it (changed
    since), so its accounting is not carried.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from selfmodel.decisions.verdict import failed_checks, was_fitted
from selfmodel.records.snippets import snippet

__all__ = ["EXPLORATORY", "LOW_YIELD_SHARE", "contrast_status", "low_yield_sentence", "status_lines"]

#: A run that keeps fewer than this share of the records it read says so first (or stops).
LOW_YIELD_SHARE: Final = 0.5
#: ``--preset exploratory``: sampler settings for a first look, never for findings.
EXPLORATORY: Final = {"draws": 300, "tune": 300, "chains": 2}
EXPLORATORY_WORDS: Final = "Exploratory settings: not for findings"

_SCALE_HINT: Final = (" If the confidence is on another scale (0-10, 0-100), declare it in a "
                      "mapping file: " + snippet("scale = [0, 10]", table="confidence")
                      + " (docs/mapping.md).")


def low_yield_sentence(summary: Mapping[str, Any]) -> str | None:
    """The low-yield sentence of an ingest summary, or ``None`` when at least half is kept.

    Examples
    --------
    >>> s = {"records_read": 1440, "records_used": 38, "records_duplicate": 0,
    ...      "quarantine_reasons": {"invalid confidence": 1402}}
    >>> print(low_yield_sentence(s))  # doctest: +NORMALIZE_WHITESPACE
    Only 38 of 1,440 records (2.6%) were kept: invalid confidence 1,402. If the confidence is
    on another scale (0-10, 0-100), declare it in a mapping file: [confidence] scale = [0, 10]
    (docs/mapping.md).
    """
    # rows a mapping's rules left out were left out on purpose: the yield is of the rest
    read = int(summary.get("records_read") or 0) - int(summary.get("records_excluded") or 0)
    used = int(summary.get("records_used") or 0)
    if read <= 0 or used >= LOW_YIELD_SHARE * read:
        return None
    reasons = dict(summary.get("quarantine_reasons") or {})
    if summary.get("records_duplicate"):
        reasons["exact duplicates of a record key"] = int(summary["records_duplicate"])
    top = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    text = (f"Only {used:,} of {read:,} records ({used / read:.1%}) were kept: "
            + ", ".join(f"{k} {v:,}" for k, v in top) + ".")
    if top and top[0][0] in ("invalid confidence", "confidence outside declared scale"):
        text += _SCALE_HINT
    return text


def _fmt(x: Any, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def _not_fitted(results: Mapping[str, Any]) -> str:
    eff = results.get("scale_effect") or {}
    reason = eff.get("reason") or (results.get("diagnostics") or {}).get("note") or "no usable data"
    missing = eff.get("models_without_scale_variable") or []
    names = [m["model"] if isinstance(m, Mapping) else str(m) for m in missing]
    contrasts = _contrasts_fitted(results)
    text = (f"The scale question is not estimable: {reason}." if contrasts
            else f"No model was fitted: {reason}.")
    if names:
        col = eff.get("registry_column") or "the scale variable"
        text += (f" {len(names)} model(s) have no {col} ({', '.join(names[:6])}"
                 f"{', ...' if len(names) > 6 else ''}).")
    if contrasts:
        return text + " The contrast model was fitted instead: what these data can decide follows."
    return text + (" Nothing below is a posterior estimate; the descriptive tables and "
                   "frequentist checks are computed from the records.")


def _contrasts_fitted(results: Mapping[str, Any]) -> bool:
    sec = results.get("contrasts") or {}
    return bool(sec) and sec.get("reason") is None and bool(sec.get("contrasts"))


def contrast_status(results: Mapping[str, Any]) -> str | None:
    """The ``contrasts`` status sentence: every decided contrast, or ``None``.

    A contrast fit that failed its diagnostics decides nothing: the sentence
    names the failed checks and gives the contrasts as computed, without decision words;
    at the exploratory settings the decisions are shown, labelled as not findings.

    Examples
    --------
    >>> d = {"decision": "worsens", "mean": -0.7, "hdi_low": -1.1, "hdi_high": -0.3,
    ...      "hdi_prob": 0.94}
    >>> R = {"contrasts": {"reason": None, "finding": True, "rope": 0.1,
    ...      "contrasts": {"condition": {"b - a": d}, "model": {}, "task": {}}}}
    >>> print(contrast_status(R))  # doctest: +NORMALIZE_WHITESPACE
    What these data can decide (contrast model, logits of self-prediction accuracy, ROPE ±0.1):
    between conditions, b - a worsens (-0.70, 94% HDI [-1.10, -0.30]).
    """
    if not _contrasts_fitted(results):
        return None
    sec = results["contrasts"]
    exploratory = (results.get("settings") or {}).get("preset") == "exploratory"
    undecided = not sec.get("finding") and not exploratory
    parts = [
        f"{factor_words} {label}{'' if undecided else ' ' + d['decision']} ({d['mean']:+.2f}, "
        f"{d['hdi_prob']:.0%} HDI [{d['hdi_low']:+.2f}, {d['hdi_high']:+.2f}])"
        for factor, factor_words in (("condition", "between conditions,"),
                                     ("model", "between models,"), ("task", "between tasks,"))
        for label, d in (sec["contrasts"].get(factor) or {}).items()
    ]
    if undecided:
        gate = failed_checks(sec.get("diagnostics") or {"passed": False}) or "diagnostics failed"
        return (f"The contrast model's fit failed its diagnostics ({gate}), so no contrast is "
                "decided; as computed (logits of self-prediction accuracy): "
                + "; ".join(parts) + ".")
    gate = ("" if sec.get("finding") else " At the exploratory settings the contrast fit's "
            "checks do not pass: these are not findings.")
    return (f"What these data can decide (contrast model, logits of self-prediction accuracy, "
            f"ROPE ±{sec.get('rope', 0):g}): " + "; ".join(parts) + "." + gate)


def status_lines(results: Mapping[str, Any]) -> list[dict[str, str]]:
    """The status sentences of a results dict, in the order they lead the report.

    Parameters
    ----------
    R
        ``results.json`` as a dict (``data``, ``diagnostics``, ``scale_effect``,
        ``settings``).

    Returns
    -------
    list of dict
        ``{"key": ..., "text": ...}``, possibly empty.
    """
    out: list[tuple[str, str]] = []
    data = results.get("data") or {}
    if (text := low_yield_sentence(data)) is not None:
        out.append(("low_yield", text))
    settings = results.get("settings") or {}
    exploratory = settings.get("preset") == "exploratory"
    if exploratory:
        s = settings.get("sampler") or {}
        out.append(("exploratory", f"{EXPLORATORY_WORDS} ({s.get('draws')} draws, "
                    f"{s.get('tune')} tuning, {s.get('chains')} chains; --preset exploratory). "
                    "Rerun without the preset before reading any verdict as a finding."))
    diag = results.get("diagnostics")
    if diag is None:  # no fitting stage (ingest, --preview)
        pass
    elif not was_fitted(diag):
        out.append(("not_fitted", _not_fitted(results)))
        if (text := contrast_status(results)) is not None:
            out.append(("contrasts", text))
    elif not diag.get("passed", True):
        numbers = (f"R-hat {_fmt(diag.get('max_rhat'), '.3f')}, bulk ESS "
                   f"{_fmt(diag.get('min_ess_bulk'), '.0f')}, divergences "
                   f"{_fmt(diag.get('divergences'), 'd')}")
        if exploratory:
            out.append(("diagnostics", f"The sampler checks do not pass at these exploratory "
                        f"settings ({numbers}); this says the run was short, not that the "
                        "model failed: rerun without --preset."))
        else:
            out.append(("diagnostics", f"Diagnostics failed ({numbers}): the verdict is "
                        "reported as computed and is not a finding."))
    n_correct = int(data.get("correct_only_records") or 0)
    if n_correct:
        out.append(("correct_only", f"{n_correct:,} records give only 'correct' (no prediction "
                    "or outcome): they are read as the self-prediction being right or wrong. "
                    "If 'correct' says whether the task was answered right, that is task "
                    "accuracy, not self-prediction: declare it in a mapping file "
                    "(correct_means = \"task\") with the stated confidence."))
    for hint in data.get("hints") or []:
        out.append(("repeats", str(hint)))
    for warning in (data.get("study_mapping") or {}).get("warnings") or []:
        out.append(("mapping", "Mapping: " + str(warning)))
    if (text := carried_sentence(data)) is not None:
        out.append(("carried", text))
    for bad in data.get("carried_not_trusted") or []:
        out.append(("carried_not_trusted", f"{bad['path']}: {bad['reason']}; its rows count as "
                    "read here, and the rows that ingest left out are not counted."))
    return [{"key": k, "text": t} for k, t in out]


def carried_sentence(data: Mapping[str, Any]) -> str | None:
    """What the counts carry from the ingests whose ``records.parquet`` was read, or ``None``.

    Examples
    --------
    >>> print(carried_sentence({"carried": [{"path": "a/records.parquet", "records_read": 1000,
    ...     "records_used": 759, "records_quarantined": 241, "records_duplicate": 0,
    ...     "records_excluded": 0, "accounting": "a/ingest.json"}]}))  # doctest: +NORMALIZE_WHITESPACE
    The counts include the ingest that made a/records.parquet (a/ingest.json: read 1,000, used 759,
    quarantined 241, duplicate 0; its quarantined rows are in the quarantine.parquet beside it).
    """
    carried = data.get("carried") or []
    if not carried:
        return None
    parts = [f"{c['path']} ({c['accounting']}: read {c['records_read']:,}, used "
             f"{c['records_used']:,}, quarantined {c['records_quarantined']:,}, duplicate "
             f"{c['records_duplicate']:,}"
             + (f", excluded {c['records_excluded']:,}" if c.get("records_excluded") else "") + ")"
             for c in carried]
    what = "the ingest" if len(carried) == 1 else f"the {len(carried)} ingests"
    return (f"The counts include {what} that made " + "; ".join(parts)[:-1]
            + "; its quarantined rows are in the quarantine.parquet beside it)."
            if len(carried) == 1 else
            f"The counts add up {what} that made " + "; ".join(parts)
            + "; each one's quarantined rows are in the quarantine.parquet beside it.")
