"""``results.json``: written by :func:`write_results` alone, from the run's state.

The keys are a contract other tools read (``docs/results.md`` lists each key and the stage
that computes it); a key is renamed only with a new ``schema_version`` (``docs/results.md``,
"Versions"). Everything in ``results.json`` is a deterministic
function of the inputs and the seed; wall-clock facts (timestamps, durations, host) go to
``run.json`` instead, so a rerun gives a byte-identical ``results.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from selfmodel.analyses import confidence_calibration, contrasts, privileged, rescoring, training
from selfmodel.common import atomic
from selfmodel.common.jsonable import rounded
from selfmodel.common.paths import shipped_study
from selfmodel.decisions.gate import gate_decisions
from selfmodel.decisions.status import status_lines
from selfmodel.decisions.validation_map import Studies, validation_map
from selfmodel.decisions.verdict import findings
from selfmodel.pipeline.state import RunState
from selfmodel.records.contract import RESULTS_SCHEMA_VERSION
from selfmodel.robustness.mixed_check import with_holdout_family
from selfmodel.robustness.stage import operating_characteristics

#: The ingest summary keys copied into ``results["data"]`` (in this order).
DATA_KEYS = (
    "sha256",
    "records_read",
    "records_used",
    "records_quarantined",
    "records_duplicate",
    "records_excluded",
    "excluded_reasons",
    "unreadable_predictions",
    "statuses",
    "carried",
    "carried_not_trusted",
    "models",
    "tasks",
    "files",
    "quarantine_reasons",
    "correct_only_records",
    "repeat_columns",
    "hints",
    "study_mapping",
)


#: The top-level keys of ``results.json`` (``docs/results.md`` names the stage of each). A
#: model's declared headline section (``SPEC.headline``, e.g. ``sdt_effect``) adds its key.
RESULT_KEYS = (
    "schema_version",
    "training_effect",
    "data",
    "models",
    "tasks",
    "by_model_task",
    "scale_effect",
    "diagnostics",
    "fit",
    "curves",
    "accuracy_points",
    "truth_comparison",
    "skill",
    "confidence_calibration",
    "frequentist",
    "crosscheck",
    "sdt_effect",
    "model_zoo",
    "settings",
    "variance_components",
    "hypotheses",
    "sensitivity",
    "operating_characteristics",
    "design_sensitivity",
    "confounds",
    "self_vs_other_rescored",
    "missingness",
    "mixed_predictive",
    "sdt_crosscheck",
    "contrasts",
    "confidence_calibration_contrasts",
    "validation_map",
    "verdict",
    "status",
)


def data_section(ingest_summary: Mapping[str, Any]) -> dict[str, Any]:
    """``results["data"]``: the ingest's accounting of every record."""
    out = {k: ingest_summary.get(k) for k in DATA_KEYS}
    out["registry"] = ingest_summary.get("registry_report")
    return out


def shipped_studies() -> Studies:
    """The operating-characteristics studies shipped as package data (each loader says when one is absent)."""
    return Studies(pipeline=(operating_characteristics() or {}).get("pipeline"),
                   training_null=shipped_study(training.NULL_OPERATING_CHARACTERISTICS_DATA, "null study"),
                   privileged=shipped_study(privileged.OPERATING_CHARACTERISTICS_DATA),
                   contrasts=shipped_study(contrasts.OPERATING_CHARACTERISTICS_DATA),
                   confidence_calibration=shipped_study(confidence_calibration.OPERATING_CHARACTERISTICS_DATA),
                   training=shipped_study(training.OPERATING_CHARACTERISTICS_DATA, "training study"),
                   self_vs_other=shipped_study(rescoring.OPERATING_CHARACTERISTICS_DATA))


def _with(section: dict[str, Any] | None, key: str, part: Any) -> dict[str, Any] | None:
    """``section`` with a robustness check's ``part`` under ``key``, ``section`` unchanged.

    The part is the check's own result, shown where readers look for it.
    """
    if section is None or part is None:
        return section
    return {**section, key: part}


def build_results(state: RunState) -> dict[str, Any]:
    """The ``results.json`` dict of ``state`` (every section as its stage left it, rounded).

    ``verdict`` holds the first screen's sentences, computed by ``selfmodel.decisions.verdict.findings``
    from the other (rounded) sections.
    """
    out = rounded(
        {
            "schema_version": RESULTS_SCHEMA_VERSION,
            "data": state.data_section,
            "models": state.models_section,
            "tasks": state.tasks_section,
            "by_model_task": state.by_model_task_section,
            "scale_effect": state.effect_section,
            "diagnostics": state.diagnostics_section,
            "fit": state.fit_section,
            "curves": state.curves_section,
            "accuracy_points": state.points_section,
            "truth_comparison": state.truth_section,
            "skill": state.skill_section,
            "confidence_calibration": state.confidence_calibration_section,
            "frequentist": state.frequentist_section,
            "crosscheck": state.crosscheck_section,
            **state.headline_sections,
            "model_zoo": state.zoo_section,
            "settings": state.settings_section,
            "variance_components": state.variance_section,
            "hypotheses": state.hypotheses_section,
            "sensitivity": state.sensitivity_section,
            "operating_characteristics": state.operating_characteristics_section,
            "design_sensitivity": state.design_sensitivity_section,
            "confounds": _with(state.confounds_section, "without_family",
                               state.robustness_checks_section.get("confounds.without_family")),
            "training_effect": state.training_section,
            "self_vs_other_rescored": state.self_vs_other_section,
            "missingness": _with(state.missingness_section, "strict_accuracy_refit",
                                 state.robustness_checks_section.get(
                                     "missingness.strict_accuracy_refit")),
            "mixed_predictive": with_holdout_family(
                state.mixed_predictive_section,
                state.robustness_checks_section.get("mixed_predictive.holdout_family")),
            "sdt_crosscheck": state.sdt_crosscheck_section,
            "contrasts": state.contrasts_section,
            "confidence_calibration_contrasts": state.confidence_calibration_contrasts_section,
        }
    )
    # a fit that failed its diagnostics gate decides nothing: its decisions say not_decided
    # (the rule's word in decision_if_passed), as the report does (analysis/decisions/gate.py)
    gate_decisions(out)
    # which kinds of decision above have an operating-characteristics study, and of which checks
    out["validation_map"] = rounded(validation_map(out, shipped_studies()))
    # the first screen's sentences, chosen from the numbers above (analysis/decisions/verdict.py)
    out["verdict"] = {"findings": findings(out)}
    # the lines the run leads with (low yield, exploratory settings, nothing fitted ...)
    out["status"] = status_lines(out)
    return out


def write_results(state: RunState) -> dict[str, Any]:
    """Write ``OUT/results.json`` from ``state`` (the only writer); returns the dict."""
    results = build_results(state)
    atomic.write_json(Path(state.config.out) / "results.json", results)
    return results
