"""The run's configuration and the typed state passed from stage to stage.

:class:`RunConfig` is everything that determines a run's results. :class:`RunState` starts
with the config and the resolved inputs; each stage of :func:`selfmodel.pipeline.stages.run` fills
its own fields (the table in ``docs/stages.md`` names the stage of each field), and
:func:`selfmodel.pipeline.results.write_results` writes ``results.json`` from it. The ``*_section``
fields hold exactly what goes into ``results.json`` under the key in the field's comment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from selfmodel import models as model_registry
from selfmodel.common.paths import DEFAULT_DATA, DEFAULT_HYPOTHESES_FILE, DEFAULT_SEED
from selfmodel.decisions.hypotheses import DecisionRule
from selfmodel.fitting.fitter import Fitter, Progress
from selfmodel.fitting.sampling import SamplerSettings
from selfmodel.records.ingest.discover import Inputs

if TYPE_CHECKING:  # only for annotations: the stages import this module
    from selfmodel.analyses.model_inputs import Tables
    from selfmodel.pipeline.model_stage import ModelFits, VerdictFit
    from selfmodel.records.ingest import IngestResult


@dataclass
class RunConfig:
    """Everything that determines a run's results."""

    paths: list[Path] = field(default_factory=lambda: [DEFAULT_DATA])
    registry: Path | None = None
    out: Path = Path("build")
    scale: str = "params"
    seed: int = DEFAULT_SEED
    mapping: dict[str, str] = field(default_factory=dict)
    config: Path | None = None
    rule: DecisionRule = field(default_factory=DecisionRule)
    rope_given: bool = False  # --rope given: it overrides the hypotheses file (one_rule)
    rule_source: str = "default"  # where the rule came from (set by pipeline.run)
    sampler: SamplerSettings = field(default_factory=SamplerSettings)
    report: bool = True
    use_cache: bool = True
    models: tuple[str, ...] = model_registry.DEFAULT_MODELS
    power: bool = True
    #: fit ``models/contrast.py`` when the verdict model is not fitted or records have conditions
    contrasts: bool = True
    #: ``--calibration-contrasts [BY]``: confidence calibration per model (``model``, ``condition``: per
    #: model x condition, ``task``: per model x task, ``auto``) with intervals and contrasts,
    #: beside any model; ``None``: only where the contrast model is fitted
    confidence_calibration_contrasts: str | None = None
    hypotheses: Path = DEFAULT_HYPOTHESES_FILE
    robustness: bool = True
    holdout: str | None = None  # "model" / "family": leave-one-group-out refits (slow)
    #: fits sampled at once in worker processes (``selfmodel.fitting.fitpool``); 1: in this process.
    #: Changes how long a run takes, not its results.
    jobs: int = 1
    study_mapping: Path | None = None  # --mapping: a format = "records" mapping file
    allow_low_yield: bool = False  # --allow-low-yield: go on when under half the rows are kept
    preset: str | None = None  # --preset exploratory: short sampling, never findings

    @property
    def cache_dir(self) -> Path | None:
        """The fits folder (``OUT/fits``), or ``None`` without the cache."""
        return (self.out / "fits") if self.use_cache else None

    def fitter(self, progress: Progress) -> Fitter:
        """The run's :class:`Fitter`: its seed, sampler settings and fit cache, saying ``progress``."""
        return Fitter(self.seed, self.sampler, self.cache_dir, progress)


@dataclass
class RunState:
    """What the stages have produced so far (see the module docstring)."""

    config: RunConfig
    inputs: Inputs
    # ingest and cells
    ingest: IngestResult | None = None
    registry: pl.DataFrame | None = None
    cells: pl.DataFrame | None = None
    tasks: list[str] = field(default_factory=list)
    # fits (working objects, not written)
    verdict: VerdictFit | None = None
    tables: Tables | None = None
    model_fits: ModelFits | None = None
    hypotheses: list[Any] = field(default_factory=list)
    # sections of results.json
    data_section: dict[str, Any] | None = None  # data
    models_section: list[dict[str, Any]] = field(default_factory=list)  # models
    tasks_section: list[dict[str, Any]] = field(default_factory=list)  # tasks
    by_model_task_section: list[dict[str, Any]] = field(default_factory=list)  # by_model_task
    effect_section: dict[str, Any] | None = None  # scale_effect
    diagnostics_section: dict[str, Any] | None = None  # diagnostics
    fit_section: dict[str, Any] | None = None  # fit
    curves_section: dict[str, Any] | None = None  # curves
    points_section: dict[str, Any] | None = None  # accuracy_points
    variance_section: dict[str, Any] | None = None  # variance_components
    truth_section: dict[str, Any] | None = None  # truth_comparison
    skill_section: list[dict[str, Any]] | None = None  # skill
    confidence_calibration_section: dict[str, Any] | None = None  # confidence_calibration
    frequentist_section: dict[str, Any] | None = None  # frequentist
    crosscheck_section: list[dict[str, Any]] | None = None  # crosscheck
    zoo_section: dict[str, Any] | None = None  # model_zoo
    headline_sections: dict[str, Any] = field(default_factory=dict)  # e.g. sdt_effect
    hypotheses_section: dict[str, Any] | None = None  # hypotheses
    sensitivity_section: dict[str, Any] | None = None  # sensitivity
    operating_characteristics_section: dict[str, Any] | None = None  # operating_characteristics
    design_sensitivity_section: dict[str, Any] | None = None  # design_sensitivity
    confounds_section: dict[str, Any] | None = None  # confounds
    training_section: dict[str, Any] | None = None  # training_effect
    self_vs_other_section: dict[str, Any] | None = None  # self_vs_other_rescored
    missingness_section: dict[str, Any] | None = None  # missingness
    mixed_predictive_section: dict[str, Any] | None = None  # mixed_predictive
    sdt_crosscheck_section: dict[str, Any] | None = None  # sdt_crosscheck
    contrasts_section: dict[str, Any] | None = None  # contrasts
    confidence_calibration_contrasts_section: dict[str, Any] | None = None  # confidence_calibration_contrasts
    settings_section: dict[str, Any] = field(default_factory=dict)  # settings
    #: the robustness checks whose results ``results.json`` shows inside other stages'
    #: sections, by the path they are shown at (``confounds.without_family``,
    #: ``missingness.strict_accuracy_refit``, ``mixed_predictive.holdout_family``): owned by
    #: the robustness stage, composed into those sections by ``write_results`` alone
    robustness_checks_section: dict[str, Any] = field(default_factory=dict)
