"""The design of a power study: tasks, models per family, variance components, rule; the default design."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Final

import numpy as np
from scipy.stats import norm

from selfmodel.decisions.hypotheses import DecisionRule
from selfmodel.records.contract import decision_words, display_order
from selfmodel.records.simulate import DEFAULT_FAMILIES, DEFAULT_TASKS

#: True slopes of the default sweep (logits per 10x parameters).
DEFAULT_SLOPES: Final = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)
#: Power that defines the minimum detectable slope.
TARGET_POWER: Final = 0.8
#: Posterior draws per simulated fit handed to :func:`selfmodel.decisions.hypotheses.decide`.
N_DRAWS: Final = 4000
#: Grid points per variance component (sigma_cell, sigma_model, sigma_family, sigma_delta).
GRID: Final = {"sigma_cell": 16, "sigma_model": 12, "sigma_family": 12, "sigma_delta": 4}
#: Power-detection outcomes reported for every slope.
OUTCOMES: Final = tuple(w.name for w in display_order(decision_words()))

Progress = Callable[[int, int], None]


# --------------------------------------------------------------------------- design


@dataclass(frozen=True)
class Task:
    """One task of a design.

    Attributes
    ----------
    name
        Task name.
    items
        Items per model (every model answers the same items).
    accuracy
        Expected accuracy of an average-size model, 0..1 (exclusive).
    unreadable
        Share of predictions that cannot be read (dropped from ``n``).
    """

    name: str
    items: int
    accuracy: float
    unreadable: float = 0.0


@dataclass(frozen=True)
class Design:
    r"""A study design and the variance components it is simulated with.

    Attributes
    ----------
    models
        ``(model, family, x_raw)`` per model carrying the scale variable; ``x_raw`` is the
        predictor on the model's scale (``log10`` billions of parameters, or a capability
        score); it is centred on the mean over models.
    tasks
        The tasks.
    repeats
        Answers per model and item.
    repeat_correlation
        Correlation :math:`\rho` between two repeated answers of one model to one item.
    sigma_family, sigma_model, sigma_cell, sigma_task_slope
        True standard deviations (logit scale) of family, model and cell effects and of the
        task slopes around their mean.
    rule
        The declared decision rule.
    units
        Units of the slope.
    source
        Where the design came from (for the record).
    """

    models: tuple[tuple[str, str, float], ...]
    tasks: tuple[Task, ...]
    repeats: int = 1
    repeat_correlation: float = 0.5
    sigma_family: float = 0.1
    sigma_model: float = 0.1
    sigma_cell: float = 0.2
    sigma_task_slope: float = 0.1
    rule: DecisionRule = field(default_factory=DecisionRule)
    units: str = "logits per 10x total parameters"
    source: str = "default"

    @property
    def families(self) -> dict[str, list[str]]:
        """Family -> its models, in design order."""
        out: dict[str, list[str]] = {}
        for m, f, _ in self.models:
            out.setdefault(f, []).append(m)
        return out

    def n_eff(self, task: Task) -> int:
        r"""Effective binomial n of one cell of ``task``.

        Readable answers over Kish's design effect :math:`1 + (R-1)\rho` (module docstring).
        """
        deff = 1.0 + (self.repeats - 1) * self.repeat_correlation
        return max(1, int(round(task.items * self.repeats * (1.0 - task.unreadable) / deff)))

    def n_cell(self, task: Task) -> int:
        """Readable answers in one cell of ``task`` (what the fit sees as ``n``)."""
        return max(1, int(round(task.items * self.repeats * (1.0 - task.unreadable))))

    def cell_correlation(self, task: Task) -> float:
        r"""Intra-cell correlation :math:`\rho'` of a simulated cell of ``task``.

        A beta-binomial cell of ``n_cell`` answers with the variance of ``items`` clusters
        of ``repeats`` answers correlated :math:`\rho`: :math:`1 + (n-1)\rho' = 1 + (R-1)\rho`.
        """
        n = self.n_cell(task)
        return (self.repeats - 1) * self.repeat_correlation / (n - 1) if n > 1 else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON form (what ``power.json`` records under ``design``)."""
        fam: dict[str, list[dict[str, Any]]] = {}
        for m, f, x in self.models:
            fam.setdefault(f, []).append({"model": m, "x_raw": x})
        return {
            "source": self.source,
            "units": self.units,
            "n_models": len(self.models),
            "n_families": len(fam),
            "families": fam,
            "tasks": [
                {**asdict(t), "n_per_cell": self.n_cell(t), "n_eff": self.n_eff(t)}
                for t in self.tasks
            ],
            "repeats": self.repeats,
            "repeat_correlation": self.repeat_correlation,
            "sigma_family": self.sigma_family,
            "sigma_model": self.sigma_model,
            "sigma_cell": self.sigma_cell,
            "sigma_task_slope": self.sigma_task_slope,
            "rule": self.rule.as_dict(),
        }


def sdt_accuracy(base_rate: float, dprime: float, criterion: float) -> float:
    """Accuracy of an equal-variance signal-detection predictor.

    Parameters
    ----------
    base_rate
        Share of items whose outcome is "yes".
    dprime
        Sensitivity.
    criterion
        Criterion :math:`c`; negative values are a yes-bias.

    Examples
    --------
    >>> round(sdt_accuracy(0.5, 0.0, 0.0), 3)
    0.5
    >>> round(sdt_accuracy(0.22, 0.6, -0.9), 3)   # word_association in data_raw/
    0.409
    """
    hit = norm.cdf(dprime / 2 - criterion)
    correct_rejection = norm.cdf(dprime / 2 + criterion)
    return float(base_rate * hit + (1 - base_rate) * correct_rejection)


def x_of_size(size_b: float) -> float:
    """The scale variable of a size in billions of parameters (log10)."""
    return float(np.log10(size_b))


def default_design() -> Design:
    """The design of the default data set in ``data_raw/``.

    Families, sizes and tasks are those of :mod:`selfmodel.records.simulate` (the 14 open models;
    closed models carry no size and do not enter the slope); task accuracies follow from
    each task's base rate, :math:`d'` and criterion. Variance components are the posterior
    means of the scale fit to ``data_raw/`` (``selfmodel run``, seed 20261130), rounded:
    sigma_family 0.11, sigma_model 0.11, sigma_cell 0.20; the task-slope spread is set to
    0.1, the spread of the true task slopes of that data set (``data_raw/truth.json``).
    """
    models = tuple(
        (f"{fam}-{suffix}", fam, x_of_size(params))
        for fam, members in DEFAULT_FAMILIES.items()
        for suffix, params, _active in members
    )
    tasks = tuple(
        Task(name=name, items=items, accuracy=round(sdt_accuracy(base, d, c), 4), unreadable=0.02)
        for name, (base, _gamma, d, c, items) in DEFAULT_TASKS.items()
    )
    return Design(
        models=models,
        tasks=tasks,
        sigma_family=0.11,
        sigma_model=0.11,
        sigma_cell=0.2,
        sigma_task_slope=0.1,
        source="default (design of data_raw/)",
    )
