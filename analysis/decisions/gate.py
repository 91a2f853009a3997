"""No decision word in ``results.json`` for an effect the report calls not decided.

A fit that failed its diagnostics gate (R-hat, bulk ESS, divergences, E-BFMI) decides nothing:
the report prints "not decided (its fit failed the diagnostics gate)" and the estimate as
computed, and a program reading ``decision`` must not read a word either.
:func:`gate_decisions` is the last step before ``results.json`` is written (:func:`selfmodel.pipeline.results.build_results`): every decision record of a failed
fit gets

* ``decision``: ``"not_decided"`` (``selfmodel.records.contract.UNDECIDED``), ``meaning``
  its phrase;
* ``decision_if_passed``: the word the rule gives its numbers, as the report's "as computed".

Hypothesis rows and members of the confirmatory family also get ``supported`` and
``direction_supported`` ``null`` (``supported_if_passed``, ``direction_supported_if_passed``
keep the computed ones); a member's ``unadjusted_decision`` is gated the same way, and so is
the Bayesian decision beside the frequentist SDT cross-check (``bayes_decision``).

The gated records, each with the fit that gates it: ``scale_effect`` (and ``per_task``; the
verdict fit, ``diagnostics``), each ``model_zoo`` entry and headline section (``sdt_effect``;
that model's ``diagnostics``), ``hypotheses.rows`` and the confirmatory family's members
(``finding`` false), ``sensitivity`` (each ``main`` by its model's fit, each variant by its
own ``diagnostics_passed``), ``confounds.without_family``, the strict-accuracy refit, the
contrast model's ``contrasts``, the training model's decisions (``training_effect``:
``trained``, ``held_out``, ``per_task``, ``sdt``) and ``sdt_crosscheck``. Decisions that no
fit gates (bootstrap intervals: ``confidence_calibration_contrasts``, ``privileged_access``,
``self_vs_other_rescored``; the shipped operating-characteristics studies) are left as they are.

At ``--preset exploratory`` nothing is gated: that report says first that nothing in it is a
finding and shows each decision labelled as not a finding, which ``finding: false`` says here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from selfmodel.records.contract import DECISION_MEANING, UNDECIDED

__all__ = ["gate_decisions", "gate_record"]

#: Decisions that say nothing was estimated or decided: never gated.
_UNGATED = frozenset({"not_estimable", UNDECIDED})


def gate_record(rec: dict[str, Any], key: str = "decision") -> bool:
    """Make one decision record of a failed fit say ``not_decided``; whether it changed.

    Examples
    --------
    >>> r = {"decision": "improves", "meaning": "credibly positive and larger than the ROPE"}
    >>> gate_record(r), r["decision"], r["decision_if_passed"], r["meaning"]
    (True, 'not_decided', 'improves', 'not decided (its fit failed the diagnostics gate)')
    >>> gate_record({"decision": "not_estimable"})
    False
    """
    word = rec.get(key)
    if not isinstance(word, str) or word in _UNGATED:
        return False
    rec[f"{key}_if_passed"] = word
    rec[key] = UNDECIDED
    if key == "decision" and "meaning" in rec:
        rec["meaning"] = DECISION_MEANING[UNDECIDED]
    for flag in ("supported", "direction_supported"):
        if key == "decision" and flag in rec:
            rec[f"{flag}_if_passed"] = rec[flag]
            rec[flag] = None
    return True


def _gate_effect(effect: Any) -> None:
    """Gate an effect's record and each of its ``per_task`` records (a dict or a list)."""
    if not isinstance(effect, dict):
        return
    gate_record(effect)
    per = effect.get("per_task")
    for e in (per.values() if isinstance(per, dict) else per if isinstance(per, list) else ()):
        if isinstance(e, dict):
            gate_record(e)


def _effects(entry: Mapping[str, Any]) -> Iterable[Any]:
    """The decided effects of a model's entry: its values that are decision records."""
    return [v for v in entry.values() if isinstance(v, dict) and "decision" in v]


def _failed(diagnostics: Any) -> bool:
    """A fit's diagnostics say it was fitted and failed (a model not fitted has no R-hat)."""
    if not isinstance(diagnostics, Mapping) or diagnostics.get("passed", True):
        return False
    return diagnostics.get("max_rhat") is not None or diagnostics.get("min_ess_bulk") is not None \
        or bool(diagnostics.get("checks"))


def gate_decisions(results: dict[str, Any]) -> dict[str, Any]:
    """Gate every decision of a failed fit in ``results`` (in place; returns it).

    See the module docstring for the sections and the fit that gates each.
    """
    if (results.get("settings") or {}).get("preset") == "exploratory":
        return results
    zoo = results.get("model_zoo") or {}
    failed = {name: _failed(e.get("diagnostics")) for name, e in zoo.items()
              if isinstance(e, dict) and e.get("fitted", True)}
    eff = results.get("scale_effect")
    verdict = (eff or {}).get("fit_model") or "scale"
    failed[verdict] = failed.get(verdict, False) or _failed(results.get("diagnostics"))
    if isinstance(eff, dict) and failed[verdict]:
        _gate_effect(eff)
    for name, entry in zoo.items():
        if isinstance(entry, dict) and failed.get(name):
            for e in _effects(entry):
                _gate_effect(e)
    for section in results.values():  # headline sections of a model (sdt_effect ...)
        if isinstance(section, dict) and section.get("fit_model") in zoo and section is not eff \
                and section.get("fitted") and failed.get(section["fit_model"]):
            for e in _effects(section):
                _gate_effect(e)
    _gate_hypotheses(results.get("hypotheses") or {})
    _gate_sensitivity(results.get("sensitivity") or {}, failed, verdict)
    wo = (results.get("confounds") or {}).get("without_family")
    if isinstance(wo, dict) and wo.get("diagnostics_passed") is False:
        gate_record(wo)
    strict = (results.get("missingness") or {}).get("strict_accuracy_refit") or {}
    if failed[verdict]:
        _gate_effect(strict.get("main"))
    if isinstance(strict.get("strict"), dict) and strict["strict"].get("diagnostics_passed") is False:
        _gate_effect(strict["strict"])
    _gate_contrasts(results.get("contrasts"))
    _gate_training(results.get("training_effect"))
    sdt_model = (results.get("sdt_effect") or {}).get("fit_model") or "sdt"
    if failed.get(sdt_model):
        for row in ((results.get("sdt_crosscheck") or {}).get("per_task") or {}).values():
            for q in row.values() if isinstance(row, dict) else ():
                if isinstance(q, dict):
                    gate_record(q, "bayes_decision")
    return results


def _gate_hypotheses(hyp: Mapping[str, Any]) -> None:
    """Hypothesis rows and confirmatory members whose fit failed (``finding`` false)."""
    for row in hyp.get("rows") or []:
        if row.get("finding") is False:
            gate_record(row)
    fam = (hyp.get("multiplicity") or {}).get("confirmatory") or {}
    for m in fam.get("members") or []:
        if m.get("finding") is False and gate_record(m):
            gate_record(m, "unadjusted_decision")


def _gate_sensitivity(sens: Mapping[str, Any], failed: Mapping[str, bool], verdict: str) -> None:
    """Each robustness entry: its ``main`` by its model's fit, each variant by its own."""
    entries = [sens.get("priors"), sens.get("scale_variable")]
    for group in ("effects", "effects_scale_variable"):
        entries += [dict(e, model=e.get("model") or name)
                    for name, e in (sens.get(group) or {}).items() if isinstance(e, dict)]
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        model = entry.get("model") or verdict
        main = entry.get("main")
        if isinstance(main, dict) and failed.get(model):
            _gate_effect(main)
            for e in _effects(main):
                _gate_effect(e)
        for v in entry.get("variants") or []:
            if isinstance(v, dict) and v.get("diagnostics_passed") is False:
                _gate_effect(v)
                for e in _effects(v):
                    _gate_effect(e)


def _gate_contrasts(sec: Any) -> None:
    """The contrast model's decisions when its fit failed (``finding`` false, fitted)."""
    if not isinstance(sec, dict) or sec.get("reason") is not None or sec.get("finding", True):
        return
    for by in (sec.get("contrasts") or {}).values():
        for rec in (by or {}).values():
            if isinstance(rec, dict):
                gate_record(rec)


def _gate_training(sec: Any) -> None:
    """The training model's decisions when its fit failed (not the bootstrap privileged access)."""
    if not isinstance(sec, dict) or not sec.get("available") or sec.get("finding", True):
        return
    for key in ("trained", "held_out"):
        _gate_effect(sec.get(key))
    for rec in sec.get("per_task") or []:
        if isinstance(rec, dict):
            gate_record(rec)
    for q in ((sec.get("sdt") or {}).values()):
        if isinstance(q, dict):
            for key in ("trained", "held_out"):
                _gate_effect(q.get(key))
            for rec in q.get("per_task") or []:
                if isinstance(rec, dict):
                    gate_record(rec)
