"""The richer-models table reads which slopes to set beside the verdict from the models'
declarations (``Effect.beside_verdict``), not from a list of model names in the report."""

from __future__ import annotations

import types
from dataclasses import replace
from pathlib import Path

from selfmodel import models
from selfmodel.models.spec import Effect
from selfmodel.report.sections.common import Report
from selfmodel.report.sections.model import richer_models


def _decision(mean: float, word: str) -> dict:
    return {"mean": mean, "hdi_low": mean - 0.1, "hdi_high": mean + 0.1, "decision": word}


def test_a_registered_model_with_such_an_effect_gets_its_row(tmp_path: Path) -> None:
    base = models.get("items")
    added = types.ModuleType("wide_slope")
    for attr in ("SUMMARY", "DEFAULT_PRIORS", "REQUIRED_COLUMNS", "build"):
        setattr(added, attr, getattr(base, attr))
    added.NAME = "wide_slope"
    added.SPEC = replace(base.SPEC, decides=(
        Effect("slope", "beta", None, beside_verdict="slope of an added model"),))
    results = {
        "scale_effect": _decision(0.2, "improves"),
        "model_zoo": {
            "within_between": {"fitted": True, "within": _decision(0.15, "credibly_positive"),
                               "diagnostics": {"passed": True}},
            "wide_slope": {"fitted": True, "slope": _decision(0.3, "improves"),
                           "diagnostics": {"passed": True}},
        },
    }
    rep = Report(results, {}, None, tmp_path, 6.3, 8.5)
    assert "slope of an added model" not in richer_models(rep)
    models.register(added)
    try:
        text = richer_models(rep)
    finally:
        models.unregister("wide_slope")
    assert "| <code>wide\\_slope</code> | slope of an added model | 0.300 |" in text
    assert "| <code>within\\_between</code> | within\\-family slope |" in text
    assert "**changed**" in text  # within_between's credibly_positive against improves
