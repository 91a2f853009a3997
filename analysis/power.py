r"""Study design and power: what a design can detect, and what a null verdict rules out.

A scaling study is only as good as the slope it can detect. This module answers two
questions with the scale model of ``models/scale.py`` and the decision rule of
:mod:`analysis.hypotheses`:

* **before** the compute is spent (``selfmodel power``): for a design (families and their
  sizes, tasks with items and expected accuracy, repeats, variance components), the
  probability of each decision at a range of true slopes, the minimum detectable slope at
  80% power, and how power changes with more models versus more items;
* **after** a fit (:func:`mde_from_fit`, the report's "what this study could detect"
  section): the slope the fitted design would have detected with 80% power, computed from
  the fitted variance components, so that ``no_credible_effect`` is read correctly.

Generative model of a simulated data set
----------------------------------------
Cells are model :math:`m` x task :math:`t`, as in the scale model; :math:`x_m` is
:math:`\log_{10}` billions of parameters centred on the mean over the design's models, and
:math:`\alpha_t = \mathrm{logit}(a_t)` with :math:`a_t` the task's expected accuracy of an
average-size model:

.. math::

    \eta_{mt} &= \alpha_t + (\beta + \delta_t)\,x_m + u_{f[m]} + v_m + w_{mt},\\
    u_f \sim N(0, \sigma_f^2),\ v_m &\sim N(0, \sigma_m^2),\ w_{mt} \sim N(0, \sigma_c^2),\
    \delta = \text{zero-sum } N(0, \sigma_\delta^2),\\
    k_{mt} &\sim \mathrm{Binomial}\big(n^{\mathrm{eff}}_{t},\ \mathrm{logit}^{-1}\eta_{mt}\big).

:math:`\beta` (the true slope of the sweep) is the mean of the task slopes, the estimand of
``beta`` in the scale model. A task's expected accuracy may be given directly or through
signal detection (outcome base rate :math:`\pi`, sensitivity :math:`d'`, criterion :math:`c`,
negative = yes-bias): :math:`a = \pi\,\Phi(d'/2 - c) + (1-\pi)\,\Phi(d'/2 + c)`. A strong
yes-bias lowers accuracy toward the base rate of "yes", which changes the binomial
information :math:`n\,a(1-a)` a cell carries.

Items and repeats: the effective n
----------------------------------
Items are taken to be shared by all models (every model answers the same items), so the
average item difficulty is part of :math:`\alpha_t`. What is left is the model x item
interaction. With :math:`I` items, :math:`R` repeats per item and :math:`\rho` the
correlation between two repeated answers of one model to one item (on the correct/incorrect
scale), the variance of a cell's accuracy is :math:`a(1-a)\,(1 + (R-1)\rho)/(IR)`: Kish's
design effect for cluster samples (Kish 1965, *Survey Sampling*, sec. 5.4). A cell carries
the information of

.. math::  n^{\mathrm{eff}} = \frac{I R\,(1 - u)}{1 + (R - 1)\rho}

independent answers (:math:`u` = share of unreadable predictions): :math:`R` repeats of a
model that answers an item consistently (:math:`\rho \to 1`) are worth one answer, and no
number of repeats carries a cell beyond :math:`I/\rho` answers. The simulation draws each
cell as the pipeline would see it, :math:`n = IR(1-u)` answers, with a beta-binomial count of
that variance (intra-cell correlation :math:`\rho' = (R-1)\rho/(n-1)`); with one answer per
item it is a plain binomial. The fit absorbs the extra-binomial variance in
:math:`\sigma_c`, as a fit of the scale model to real repeated answers does.
``tests/test_power.py`` checks this against a brute-force simulation of every answer
(beta-distributed model-item propensities, :math:`R` answers each) at two design points.

Fast approximate fit
--------------------
A full NUTS fit per simulated data set is too slow for a sweep (~30 s of compilation per
data shape here, then seconds per fit). Each simulated data set is instead fitted by a
deterministic approximation of the same Bayesian model:

1. each cell's count becomes an empirical logit :math:`y = \log\frac{k + 1/2}{n - k + 1/2}`
   with variance :math:`s^2 = \frac{1}{k + 1/2} + \frac{1}{n - k + 1/2}` (Cox & Snell 1989,
   *Analysis of Binary Data*, sec. 2.1.6): the binomial likelihood in normal form;
2. given the variance components :math:`\theta = (\sigma_f, \sigma_m, \sigma_c, \sigma_\delta)`
   the model is linear-Gaussian: task intercepts and task slopes (with the scale model's
   priors: :math:`\alpha_t \sim N(0, 1.5^2)`, task slopes :math:`\beta + \delta_t` with
   :math:`\beta \sim N(0, 1)` and zero-sum :math:`\delta`) integrate out exactly, which gives
   :math:`p(y \mid \theta)` and the normal conditional posterior of :math:`\beta`; the nested
   family/model/cell covariance is inverted in closed form (two rank-one updates per
   model and per family), so a likelihood evaluation costs :math:`O(\text{cells})`;
3. :math:`\theta` is integrated on a product grid at the mid-quantiles of its
   ``HalfNormal`` priors (the priors of ``models/scale.py``, read from
   :data:`models.scale.DEFAULT_PRIORS`), so every grid point has equal prior mass and the
   weights are the likelihoods: the posterior of :math:`\beta` is a mixture of normals
   (the grid-integration idea of INLA; Rue, Martino & Chopin 2009, *JRSS B* 71(2));
4. a Laplace step: each cell's normal approximation is re-centred at its posterior mean
   logit :math:`\hat\eta` (working response :math:`\hat\eta + (k - n\hat p)/(n\hat p(1-\hat p))`,
   variance :math:`1/(n\hat p(1-\hat p))`; Breslow & Clayton 1993, *JASA* 88) and steps 2-3
   are repeated on the part of the grid that carries posterior mass. Without it, weights
   computed from each cell's own counts pull the slope toward 0 when cells are small (by
   ~10% of the slope with ~33 answers per cell; ``tests/test_power.py``);
5. 4,000 draws from that mixture go through :func:`analysis.hypotheses.decide`, the very rule
   the pipeline applies to NUTS draws.

The differences from the NUTS fit are the normal approximation of each cell's binomial
likelihood (good when every cell has a few dozen correct and incorrect answers), the grid
quadrature, and independent rather than zero-sum family/model intercepts (their sum is
absorbed by the task intercepts). ``bench/power_validation.py`` compares the two fits on the
same simulated data sets at several design points; its numbers are in
``bench/results/power_validation.json``.

Random numbers
--------------
One seed fixes everything. The random effects, binomial uniforms and posterior draws of
simulation :math:`s` are shared by every true slope (common random numbers), so power
curves are smooth in the slope and differences between slopes are not Monte Carlo noise.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import numpy as np
import polars as pl
from scipy.special import betaincinv, expit, logit
from scipy.stats import binom, norm

from analysis.contract import SCALE_COLUMNS, InputError
from analysis.hypotheses import DecisionRule, decide
from analysis.paths import DEFAULT_SEED

__all__ = [
    "DEFAULT_SLOPES",
    "Design",
    "Task",
    "default_design",
    "design_from_results",
    "design_from_template",
    "design_to_toml",
    "fast_fit",
    "load_design",
    "mde_from_fit",
    "models_vs_items",
    "plot_power",
    "power_table",
    "normal_theory_mde",
    "run_power",
    "simulate_cells",
    "summary_lines",
    "sweep_slope",
    "write_power",
]

#: True slopes of the default sweep (logits per 10x parameters).
DEFAULT_SLOPES: Final = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)
#: Power that defines the minimum detectable slope.
TARGET_POWER: Final = 0.8
#: Posterior draws per simulated fit handed to :func:`analysis.hypotheses.decide`.
N_DRAWS: Final = 4000
#: Grid points per variance component (sigma_cell, sigma_model, sigma_family, sigma_delta).
GRID: Final = {"sigma_cell": 16, "sigma_model": 12, "sigma_family": 12, "sigma_delta": 4}
#: Power-detection outcomes reported for every slope.
OUTCOMES: Final = (
    "improves", "credibly_positive", "no_credible_effect", "practically_null", "credibly_negative", "worsens"
)

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


def _x_of_size(size_b: float) -> float:
    return float(np.log10(size_b))


def default_design() -> Design:
    """The design of the default data set in ``data_raw/``.

    Families, sizes and tasks are those of :mod:`analysis.simulate` (the 14 open models;
    closed models carry no size and do not enter the slope); task accuracies follow from
    each task's base rate, :math:`d'` and criterion. Variance components are the posterior
    means of the scale fit to ``data_raw/`` (``selfmodel run``, seed 20261130), rounded:
    sigma_family 0.11, sigma_model 0.11, sigma_cell 0.20; the task-slope spread is set to
    0.1, the spread of the true task slopes of that data set (``data_raw/truth.json``).
    """
    from analysis.simulate import DEFAULT_FAMILIES, DEFAULT_TASKS

    models = tuple(
        (f"{fam}-{suffix}", fam, _x_of_size(params))
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


# --------------------------------------------------------------------------- design files

_TOP_KEYS: Final = (
    "repeats",
    "repeat_correlation",
    "units",
    "families",
    "tasks",
    "variance",
    "rule",
)
_TASK_KEYS: Final = ("items", "accuracy", "base_rate", "dprime", "criterion", "unreadable")
_VARIANCE_KEYS: Final = ("sigma_family", "sigma_model", "sigma_cell", "sigma_task_slope")
_RULE_KEYS: Final = ("rope", "prob_threshold", "hdi_prob", "min_models")

DESIGN_EXAMPLE: Final = """\
# selfmodel power design (TOML). Sizes are billions of parameters.
repeats = 1                 # answers per model and item
repeat_correlation = 0.5    # correlation of two answers of one model to one item

[families]
aurora = [1, 8, 34, 70]
borealis = [2, 9, 27]

[tasks.refusal]
items = 250
base_rate = 0.8             # share of items whose outcome is "yes"
dprime = 1.0                # sensitivity
criterion = -0.5            # negative = yes-bias
# accuracy = 0.77           # or give the expected accuracy directly

[variance]                  # logit scale
sigma_family = 0.11
sigma_model = 0.11
sigma_cell = 0.2
sigma_task_slope = 0.1

[rule]                      # the declared decision rule (analysis.hypotheses)
rope = 0.1
prob_threshold = 0.95
hdi_prob = 0.94
"""


def _key_line(text: str, key: str, section: str | None) -> int | None:
    """Best-effort line of ``key`` inside ``[section]`` (or of the ``[section.key]`` header)."""
    current: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = re.match(r"\s*\[\s*([^\]]+?)\s*\]", line)
        if header:
            current = header.group(1).replace('"', "").replace("'", "").strip()
            if section is not None and current == f"{section}.{key}":
                return number
            if section is None and current == key:
                return number
            continue
        if current == section and re.match(rf"\s*[\"']?{re.escape(key)}[\"']?\s*=", line):
            return number
    return None


class _DesignReader:
    """Validate a parsed design TOML, raising one-line InputErrors that name file, line, key."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text

    def fail(self, key: str, what: str, todo: str, section: str | None = None) -> InputError:
        from analysis.registry import format_input_error

        leaf = key.rsplit(".", 1)[-1]
        line = _key_line(self.text, leaf, section)
        where = f"key '{key}'"
        msg = format_input_error(self.path, f"{where}: {what}", todo, line=line)
        return InputError(msg)

    def check_keys(
        self, table: Mapping[str, Any], allowed: Sequence[str], section: str | None
    ) -> None:
        from analysis.registry import did_you_mean

        for key in table:
            if key not in allowed:
                full = f"{section}.{key}" if section else key
                hint = did_you_mean(key, allowed).strip()
                raise self.fail(
                    full,
                    "unknown key" + (f". {hint}" if hint else ""),
                    f"Allowed keys here: {', '.join(allowed)}",
                    section,
                )

    def number(
        self,
        table: Mapping[str, Any],
        key: str,
        section: str | None,
        *,
        lo: float,
        hi: float,
        default: float | None = None,
        integer: bool = False,
        lo_open: bool = False,
        hi_open: bool = False,
    ) -> float:
        full = f"{section}.{key}" if section else key
        if key not in table:
            if default is None:
                raise self.fail(full, "missing", f"Add '{key} = ...'", section)
            return default
        v = table[key]
        if (
            isinstance(v, bool)
            or not isinstance(v, int | float)
            or (integer and not isinstance(v, int))
        ):
            kind = "an integer" if integer else "a number"
            raise self.fail(full, f"value {v!r} is not {kind}", f"Write {kind}", section)
        bad_lo = v <= lo if lo_open else v < lo
        bad_hi = v >= hi if hi_open else v > hi
        if not math.isfinite(v) or bad_lo or bad_hi:
            rng = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
            raise self.fail(full, f"value {v!r} is outside {rng}", f"Use a value in {rng}", section)
        return float(v)


def load_design(path: Path | str) -> Design:
    """Read a design from a TOML file (see :data:`DESIGN_EXAMPLE`).

    Parameters
    ----------
    path
        The TOML file: ``repeats``, ``repeat_correlation``, ``[families]`` (family = list of
        sizes in billions of parameters), one ``[tasks.NAME]`` table per task (``items`` and
        either ``accuracy`` or ``base_rate``/``dprime``/``criterion``; optional
        ``unreadable``), ``[variance]`` and ``[rule]``. Omitted variance components and rule
        settings take the defaults of :func:`default_design` and
        :class:`~analysis.hypotheses.DecisionRule`.

    Returns
    -------
    Design

    Raises
    ------
    InputError
        One line naming the file, the line and the key, with "did you mean" for a typo.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "design.toml"
    >>> _ = p.write_text(DESIGN_EXAMPLE)
    >>> d = load_design(p)
    >>> len(d.models), [t.name for t in d.tasks], round(d.tasks[0].accuracy, 3)
    (7, ['refusal'], 0.773)
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such design file. Check the path.") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(
            f"{path}: cannot read the design file ({e}). Save it as UTF-8 text."
        ) from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(
            f"{path}: not valid TOML ({e}). Fix the syntax; see 'selfmodel power --help'."
        ) from None
    r = _DesignReader(path, text)
    r.check_keys(raw, _TOP_KEYS, None)
    defaults = default_design()

    fams = raw.get("families")
    if not isinstance(fams, dict) or not fams:
        raise r.fail(
            "families", "missing or empty", "Add a [families] table: name = [sizes in billions]"
        )
    models: list[tuple[str, str, float]] = []
    for fam, sizes in fams.items():
        if not isinstance(sizes, list) or not sizes:
            raise r.fail(
                f"families.{fam}",
                f"value {sizes!r} is not a list of sizes",
                "Write e.g. [1, 8, 70] (billions of parameters)",
                "families",
            )
        for i, s in enumerate(sizes):
            if (
                isinstance(s, bool)
                or not isinstance(s, int | float)
                or not math.isfinite(s)
                or s <= 0
            ):
                raise r.fail(
                    f"families.{fam}",
                    f"size {s!r} is not a positive number",
                    "Sizes are billions of parameters, e.g. 0.5 or 70",
                    "families",
                )
            models.append((f"{fam}-{i + 1}:{s:g}b", str(fam), _x_of_size(float(s))))
    if len(models) < 3:
        raise r.fail("families", f"only {len(models)} model(s)", "A slope needs at least 3 models")
    if len({x for *_, x in models}) < 2:
        raise r.fail("families", "every model has the same size", "Give models of different sizes")

    tasks_raw = raw.get("tasks")
    if not isinstance(tasks_raw, dict) or not tasks_raw:
        raise r.fail(
            "tasks",
            "missing or empty",
            "Add at least one [tasks.NAME] table with items and accuracy",
        )
    tasks: list[Task] = []
    for name, spec in tasks_raw.items():
        sec = f"tasks.{name}"
        if not isinstance(spec, dict):
            raise r.fail(
                sec, "is not a table", f"Write [tasks.{name}] with items = ... and accuracy = ..."
            )
        r.check_keys(spec, _TASK_KEYS, sec)
        items = int(r.number(spec, "items", sec, lo=1, hi=1e9, integer=True))
        if "accuracy" in spec:
            if any(k in spec for k in ("base_rate", "dprime", "criterion")):
                raise r.fail(
                    f"{sec}.accuracy",
                    "given together with base_rate/dprime/criterion",
                    "Give either accuracy or the signal-detection settings",
                    sec,
                )
            acc = r.number(spec, "accuracy", sec, lo=0, hi=1, lo_open=True, hi_open=True)
        elif "base_rate" in spec:
            base = r.number(spec, "base_rate", sec, lo=0, hi=1)
            dprime = r.number(spec, "dprime", sec, lo=-10, hi=10, default=1.0)
            crit = r.number(spec, "criterion", sec, lo=-10, hi=10, default=0.0)
            acc = sdt_accuracy(base, dprime, crit)
            if not 0.001 < acc < 0.999:
                raise r.fail(
                    sec, f"implies accuracy {acc:.4f}", "Use less extreme dprime/criterion"
                )
        else:
            raise r.fail(
                f"{sec}.accuracy",
                "missing",
                "Give accuracy = ... or base_rate (with dprime, criterion)",
                sec,
            )
        unread = r.number(spec, "unreadable", sec, lo=0, hi=1, hi_open=True, default=0.0)
        tasks.append(Task(str(name), items, round(acc, 6), unread))

    repeats = int(r.number(raw, "repeats", None, lo=1, hi=1e6, integer=True, default=1))
    rho = r.number(raw, "repeat_correlation", None, lo=0, hi=1, default=0.5)
    var = raw.get("variance", {})
    if not isinstance(var, dict):
        raise r.fail("variance", "is not a table", "Write [variance] with sigma_family = ... etc.")
    r.check_keys(var, _VARIANCE_KEYS, "variance")
    sig = {
        k: r.number(var, k, "variance", lo=0, hi=10, default=getattr(defaults, k))
        for k in _VARIANCE_KEYS
    }
    rule_raw = raw.get("rule", {})
    if not isinstance(rule_raw, dict):
        raise r.fail("rule", "is not a table", "Write [rule] with rope = ... etc.")
    r.check_keys(rule_raw, _RULE_KEYS, "rule")
    base_rule = DecisionRule()
    rule = DecisionRule(
        rope=r.number(rule_raw, "rope", "rule", lo=0, hi=10, default=base_rule.rope),
        prob_threshold=r.number(
            rule_raw,
            "prob_threshold",
            "rule",
            lo=0.5,
            hi=1,
            hi_open=True,
            default=base_rule.prob_threshold,
        ),
        hdi_prob=r.number(
            rule_raw, "hdi_prob", "rule", lo=0.5, hi=1, hi_open=True, default=base_rule.hdi_prob
        ),
        min_models=int(
            r.number(
                rule_raw,
                "min_models",
                "rule",
                lo=2,
                hi=1e6,
                integer=True,
                default=base_rule.min_models,
            )
        ),
    )
    units = raw.get("units", defaults.units)
    if not isinstance(units, str):
        raise r.fail(
            "units",
            f"value {units!r} is not text",
            'Write units = "logits per 10x total parameters"',
        )
    return Design(
        models=tuple(models),
        tasks=tuple(tasks),
        repeats=repeats,
        repeat_correlation=rho,
        rule=rule,
        units=units,
        source=str(path),
        **sig,
    )


def design_to_toml(design: Design) -> str:
    """Write a design as TOML that :func:`load_design` reads back.

    Sizes are written as ``10 ** x_raw`` billions, so a design whose predictor is not a size
    (capability) is written on that scale with a comment saying so.

    Examples
    --------
    >>> d = default_design()
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "d.toml"
    >>> _ = p.write_text(design_to_toml(d))
    >>> d2 = load_design(p)
    >>> [t.accuracy for t in d2.tasks] == [t.accuracy for t in d.tasks], len(d2.models)
    (True, 14)
    """
    lines = [
        "# selfmodel power design (written by selfmodel power; load with --design)",
        f"# source: {design.source}",
        f"repeats = {design.repeats}",
        f"repeat_correlation = {design.repeat_correlation:g}",
        f'units = "{design.units}"',
        "",
        "[families]  # sizes in billions of parameters",
    ]
    if "capability" in design.units:
        lines.insert(
            -1, "# this design's predictor is a capability score x; the 'sizes' below are 10**x"
        )
    for fam, members in design.families.items():
        xs = [x for m, f, x in design.models if f == fam]
        del members
        lines.append(f'"{fam}" = [{", ".join(f"{10**x:.6g}" for x in xs)}]')
    for t in design.tasks:
        lines += [
            "",
            f'[tasks."{t.name}"]',
            f"items = {t.items}",
            f"accuracy = {t.accuracy:.6g}",
            f"unreadable = {t.unreadable:.6g}",
        ]
    lines += ["", "[variance]"] + [f"{k} = {getattr(design, k):.6g}" for k in _VARIANCE_KEYS]
    rule = design.rule
    lines += [
        "",
        "[rule]",
        f"rope = {rule.rope:g}",
        f"prob_threshold = {rule.prob_threshold:g}",
        f"hdi_prob = {rule.hdi_prob:g}",
        f"min_models = {rule.min_models}",
        "",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- templates


def _variance_from_results(results: Mapping[str, Any]) -> dict[str, float]:
    """Posterior means of the variance components saved in ``results.json``."""
    vc = results.get("variance_components") or {}
    names = {
        "sigma_family": "sigma_family",
        "sigma_model": "sigma_model",
        "sigma_cell": "sigma_cell",
        "sigma_task_slope": "sigma_delta",
    }
    out: dict[str, float] = {}
    for ours, theirs in names.items():
        entry = vc.get(theirs)
        value = entry.get("mean") if isinstance(entry, Mapping) else entry
        if isinstance(value, int | float) and math.isfinite(value):
            out[ours] = float(value)
    return out


def design_from_template(
    records: Sequence[Path | str],
    registry: Path | str,
    *,
    results: Path | str | Mapping[str, Any] | None = None,
    scale: str = "params",
) -> Design:
    """Take the design of an existing data set.

    Families, models and their scale values come from the registry (models without the
    scale variable are left out, as in the fit); tasks, items per task (distinct
    ``item_id``), repeats (answers per model and item), unreadable share and accuracy (pooled
    over the models in the slope) from the records. Variance components are the posterior
    means in ``results`` (a ``results.json`` of a fit to these data) when given, else the
    defaults of :func:`default_design`.

    Parameters
    ----------
    records
        Record files or folders (as for ``selfmodel run``).
    registry
        The model registry.
    results
        A ``results.json`` path or dict carrying ``variance_components``.
    scale
        The scale variable (``params``, ``active_params`` or ``capability``).

    Returns
    -------
    Design
    """
    import json

    from analysis.cells import build_cells
    from analysis.ingest import ingest
    from analysis.registry import load_registry

    res = ingest(list(records), registry=registry)
    reg = load_registry(registry)
    cells = build_cells(res.records, reg, scale=scale)
    usable = cells.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))
    if usable["model"].n_unique() < 3:
        raise InputError(
            f"{registry}: only {usable['model'].n_unique()} model(s) have "
            f"'{SCALE_COLUMNS[scale]}'; "
            "a design needs at least 3 models with the scale variable. Add sizes to the registry."
        )
    per_model = (
        usable.group_by("model")
        .agg(pl.col("family").first(), pl.col("scale_raw").first())
        .sort("model")
    )
    log = scale in ("params", "active_params")
    models = tuple(
        (r["model"], r["family"], float(np.log10(r["scale_raw"]) if log else r["scale_raw"]))
        for r in per_model.iter_rows(named=True)
    )
    recs = res.records.filter(pl.col("model").is_in(per_model["model"].to_list()))
    per_task = (
        recs.group_by("task")
        .agg(
            pl.col("item_id").n_unique().alias("items"),
            pl.len().alias("records"),
            pl.struct("model", "item_id").n_unique().alias("model_items"),
        )
        .sort("task")
    )
    totals = usable.group_by("task").agg(
        pl.col("n").sum(), pl.col("k").sum(), pl.col("n_total").sum()
    )
    cell_tot = {r["task"]: r for r in totals.iter_rows(named=True)}
    tasks = []
    reps = []
    for r in per_task.iter_rows(named=True):
        c = cell_tot.get(r["task"])
        if c is None:  # no readable answer of a model with the scale variable
            continue
        acc = min(max(c["k"] / c["n"], 0.01), 0.99)
        tasks.append(
            Task(r["task"], int(r["items"]), round(acc, 4), round(1 - c["n"] / c["n_total"], 4))
        )
        reps.append(r["records"] / r["model_items"])
    repeats = max(1, int(round(float(np.mean(reps)))))
    sig: dict[str, float] = {}
    if results is not None:
        if isinstance(results, Mapping):
            loaded = results
        else:
            try:
                loaded = json.loads(Path(results).read_text(encoding="utf-8"))
            except FileNotFoundError:
                raise InputError(
                    f"{results}: no such results file. Give the results.json of a fit."
                ) from None
            except (OSError, ValueError) as e:
                raise InputError(f"{results}: not a readable results.json ({e}).") from None
        sig = _variance_from_results(loaded)
        if not sig:
            raise InputError(
                f"{results}: has no 'variance_components'. Rerun 'selfmodel run' with this "
                "version, or leave out --results to use the default variance components."
            )
    d = default_design()
    return Design(
        models=models,
        tasks=tuple(tasks),
        repeats=repeats,
        sigma_family=sig.get("sigma_family", d.sigma_family),
        sigma_model=sig.get("sigma_model", d.sigma_model),
        sigma_cell=sig.get("sigma_cell", d.sigma_cell),
        sigma_task_slope=sig.get("sigma_task_slope", d.sigma_task_slope),
        units=_units(scale),
        source=f"template: {', '.join(str(p) for p in records)} + {registry}"
        + (" + fitted variance components" if sig else " (default variance components)"),
    )


def _units(scale: str) -> str:
    return {
        "params": "logits per 10x total parameters",
        "active_params": "logits per 10x active parameters",
        "capability": "logits per unit of capability score",
    }.get(scale, "logits per unit of the scale variable")


def design_from_results(results: Mapping[str, Any]) -> Design:
    """The design a fitted ``results.json`` describes, with its fitted variance components.

    Models are those in the slope (``models[].in_scale_fit``), with their scale value;
    each task's cells get the mean readable ``n`` of its cells (``by_model_task``; these are
    the answers the fit saw, so ``repeats = 1``) and the pooled accuracy; the variance
    components are the posterior means in ``results["variance_components"]``; the rule is
    the one the verdict used (``settings.rule``).
    """
    settings = results.get("settings") or {}
    scale = settings.get("scale", "params")
    col = SCALE_COLUMNS.get(scale, "params_b")
    log = scale in ("params", "active_params")
    models = []
    for m in results.get("models", []):
        v = m.get(col)
        if m.get("in_scale_fit") and v is not None:
            models.append((m["model"], m["family"], float(np.log10(v)) if log else float(v)))
    names = {m for m, *_ in models}
    rows = [r for r in results.get("by_model_task", []) if r["model"] in names and r.get("n")]
    tasks = []
    for t in sorted({r["task"] for r in rows}):
        sub = [r for r in rows if r["task"] == t]
        n = float(np.mean([r["n"] for r in sub]))
        k = sum(r["n"] * r["accuracy"] for r in sub if r["accuracy"] is not None)
        acc = min(max(k / sum(r["n"] for r in sub), 0.01), 0.99)
        tasks.append(Task(t, max(1, int(round(n))), round(acc, 4), 0.0))
    sig = _variance_from_results(results)
    missing = [k for k in ("sigma_family", "sigma_model", "sigma_cell") if k not in sig]
    if missing:
        raise KeyError(
            f"results.json has no posterior mean for {', '.join(missing)} (variance_components)"
        )
    rule_d = settings.get("rule") or {}
    rule = DecisionRule(**{k: rule_d[k] for k in _RULE_KEYS if k in rule_d})
    return Design(
        models=tuple(models),
        tasks=tuple(tasks),
        repeats=1,
        repeat_correlation=0.0,
        sigma_family=sig["sigma_family"],
        sigma_model=sig["sigma_model"],
        sigma_cell=sig["sigma_cell"],
        sigma_task_slope=sig.get("sigma_task_slope", 0.1),
        rule=rule,
        units=_units(scale),
        source="fitted design (results.json)",
    )


# --------------------------------------------------------------------------- cell layout


def _halfnormal_grid(sigma: float, points: int) -> np.ndarray:
    """Mid-quantiles of HalfNormal(sigma): equal prior mass per point."""
    u = (np.arange(points) + 0.5) / points
    return sigma * norm.ppf((1.0 + u) / 2.0)


def _prior_sigmas() -> dict[str, float]:
    """Scales of the scale model's priors (so the approximation uses the same priors)."""
    from models.scale import DEFAULT_PRIORS

    out = {}
    for name in ("alpha", "slope_task", "sigma_family", "sigma_model", "sigma_cell"):
        dist, kw = DEFAULT_PRIORS[name]
        want = "Normal" if name in ("alpha", "slope_task") else "HalfNormal"
        if dist != want or (want == "Normal" and kw.get("mu", 0.0) != 0.0):
            raise NotImplementedError(
                f"analysis.power assumes {name} ~ {want}(0, s) as in models/scale.py; "
                f"it is now {dist}{kw}"
            )
        out[name] = float(kw["sigma"])
    return out


@dataclass
class _Layout:
    """Cells sorted by family, model, task, with the index arrays the fast fit needs."""

    models: list[str]
    families: list[str]
    tasks: list[str]
    cell_model: np.ndarray  # (N,) model index
    cell_task: np.ndarray  # (N,) task index
    model_family: np.ndarray  # (M,) family index
    x: np.ndarray  # (N,) centred predictor of the cell's model
    n: np.ndarray  # (N,) binomial n
    rho: np.ndarray | None = None  # (N,) intra-cell correlation of simulated answers
    model_start: np.ndarray = field(init=False)
    family_start: np.ndarray = field(init=False)
    X: np.ndarray = field(init=False)
    OXX: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.model_start = np.flatnonzero(np.r_[True, np.diff(self.cell_model) != 0])
        self.family_start = np.flatnonzero(np.r_[True, np.diff(self.model_family) != 0])
        if len(self.model_start) != len(self.models) or len(self.family_start) != len(
            self.families
        ):
            raise ValueError("cells must be sorted by family, then model")
        T = len(self.tasks)
        onehot = np.eye(T)[self.cell_task]
        self.X = np.hstack([onehot, onehot * self.x[:, None]])
        self.OXX = self.X[:, :, None] * self.X[:, None, :]

    @property
    def n_cells(self) -> int:
        return len(self.cell_model)

    @classmethod
    def from_design(cls, design: Design) -> _Layout:
        fam_names = list(dict.fromkeys(f for _, f, _ in design.models))
        ordered = sorted(design.models, key=lambda m: (fam_names.index(m[1]),))
        xs = np.array([x for *_, x in ordered])
        xc = xs - xs.mean()
        T = len(design.tasks)
        M = len(ordered)
        return cls(
            models=[m for m, *_ in ordered],
            families=fam_names,
            tasks=[t.name for t in design.tasks],
            cell_model=np.repeat(np.arange(M), T),
            cell_task=np.tile(np.arange(T), M),
            model_family=np.array([fam_names.index(f) for _, f, _ in ordered]),
            x=np.repeat(xc, T),
            n=np.tile(np.array([design.n_cell(t) for t in design.tasks], dtype=np.int64), M),
            rho=np.tile(np.array([design.cell_correlation(t) for t in design.tasks]), M),
        )

    @classmethod
    def from_cells(cls, cells: pl.DataFrame) -> tuple[_Layout, np.ndarray]:
        """Layout and counts of a cells table (``model, family, task, x, n, k``), as fitted."""
        c = cells.filter(pl.col("n") > 0).sort("family", "model", "task")
        families = list(dict.fromkeys(c["family"].to_list()))
        models = list(dict.fromkeys(c["model"].to_list()))
        tasks = sorted(set(c["task"].to_list()))
        fam_of = dict(zip(c["model"].to_list(), c["family"].to_list(), strict=True))
        layout = cls(
            models=models,
            families=families,
            tasks=tasks,
            cell_model=np.array([models.index(m) for m in c["model"].to_list()]),
            cell_task=np.array([tasks.index(t) for t in c["task"].to_list()]),
            model_family=np.array([families.index(fam_of[m]) for m in models]),
            x=c["x"].to_numpy().astype(float),
            n=c["n"].to_numpy().astype(np.int64),
        )
        return layout, c["k"].to_numpy().astype(np.int64)


@dataclass
class _Grid:
    """The variance-component grid and the fixed-effect prior at each sigma_delta."""

    sigma_cell: np.ndarray
    sigma_model: np.ndarray
    sigma_family: np.ndarray
    sigma_delta: np.ndarray
    lam0: np.ndarray  # (nd, p, p) prior precision of (alpha, task slopes)
    logdet_lam0: np.ndarray  # (nd,)
    c: np.ndarray  # (p,) beta = c' (alpha, slopes)

    @classmethod
    def make(cls, n_tasks: int, sizes: Mapping[str, int] | None = None) -> _Grid:
        """The grid at the prior mid-quantiles (equal prior mass per point)."""
        sizes = {**GRID, **(sizes or {})}
        pr = _prior_sigmas()
        # the scale model gives every task slope its own prior: no spread to integrate over
        sd = np.array([pr["slope_task"]]) if n_tasks > 1 else np.array([0.0])
        return cls.at(
            n_tasks,
            sigma_cell=_halfnormal_grid(pr["sigma_cell"], sizes["sigma_cell"]),
            sigma_model=_halfnormal_grid(pr["sigma_model"], sizes["sigma_model"]),
            sigma_family=_halfnormal_grid(pr["sigma_family"], sizes["sigma_family"]),
            sigma_delta=sd,
        )

    @classmethod
    def at(
        cls,
        n_tasks: int,
        *,
        sigma_cell: Any,
        sigma_model: Any,
        sigma_family: Any,
        sigma_delta: Any,
    ) -> _Grid:
        """A grid at given values (a single point gives the plug-in posterior)."""
        pr = _prior_sigmas()
        T = n_tasks
        sd = np.atleast_1d(np.asarray(sigma_delta, dtype=float)) if T > 1 else np.array([0.0])
        lam0 = []
        logdet = []
        for _s in sd:
            # task slopes b_t ~ N(0, s0^2) independently (models/scale.py,
            # task_slopes="independent"): the prior precision does not depend on the grid's
            # sigma_delta, which only labels the true spread of the simulated slopes
            prec_b = np.eye(T) / pr["slope_task"] ** 2
            lam = np.zeros((2 * T, 2 * T))
            lam[:T, :T] = np.eye(T) / pr["alpha"] ** 2
            lam[T:, T:] = prec_b
            lam0.append(lam)
            logdet.append(np.linalg.slogdet(lam)[1])
        c = np.r_[np.zeros(T), np.full(T, 1.0 / T)]
        return cls(
            sigma_cell=np.atleast_1d(np.asarray(sigma_cell, dtype=float)),
            sigma_model=np.atleast_1d(np.asarray(sigma_model, dtype=float)),
            sigma_family=np.atleast_1d(np.asarray(sigma_family, dtype=float)),
            sigma_delta=sd,
            lam0=np.array(lam0),
            logdet_lam0=np.array(logdet),
            c=c,
        )


def _plugin_sd(design: Design, *, unlimited_items: bool = False) -> float:
    """Posterior sd of beta at the design's variance components (plug-in, normal theory).

    With ``unlimited_items`` every cell's binomial variance is 0: what is left comes from
    family, model and cell variation, which only more models (and tasks) reduce.
    """
    layout = _Layout.from_design(design)
    g = _Grid.at(
        len(layout.tasks),
        sigma_cell=max(design.sigma_cell, 1e-6),
        sigma_model=design.sigma_model,
        sigma_family=design.sigma_family,
        sigma_delta=max(design.sigma_task_slope, 1e-6),
    )
    acc = np.array([t.accuracy for t in design.tasks])[layout.cell_task]
    n_eff = np.array([design.n_eff(t) for t in design.tasks])[layout.cell_task]
    s2 = np.zeros(layout.n_cells) if unlimited_items else 1.0 / (n_eff * acc * (1 - acc))
    _, _, var = _grid_posterior(layout, g, np.zeros(layout.n_cells), s2)
    return float(np.sqrt(var[0]))


def _restrict(grid: _Grid, wts: np.ndarray, mass: float = 1e-5) -> _Grid:
    """The sub-grid (a box) outside which every variance component has posterior mass < mass."""
    shape = (
        len(grid.sigma_cell),
        len(grid.sigma_model),
        len(grid.sigma_family),
        len(grid.sigma_delta),
    )
    w4 = wts.reshape(shape)
    keep = []
    for axis in range(4):
        marginal = w4.sum(axis=tuple(a for a in range(4) if a != axis))
        idx = np.flatnonzero(marginal >= mass)
        keep.append(slice(idx.min(), idx.max() + 1))
    return replace(
        grid,
        sigma_cell=grid.sigma_cell[keep[0]],
        sigma_model=grid.sigma_model[keep[1]],
        sigma_family=grid.sigma_family[keep[2]],
        sigma_delta=grid.sigma_delta[keep[3]],
        lam0=grid.lam0[keep[3]],
        logdet_lam0=grid.logdet_lam0[keep[3]],
    )


def _vinv(
    layout: _Layout, theta: tuple[float, float, float], s2: np.ndarray, R: np.ndarray
) -> np.ndarray:
    """``V^-1 R`` for the nested covariance at ``theta = (sigma_c, sigma_m, sigma_f)``, R (N, q)."""
    sc, sm, sf = theta
    ms, fs = layout.model_start, layout.family_start
    inv_d = 1.0 / (sc**2 + s2)
    A1 = R * inv_d[:, None]
    g = 1.0 + sm**2 * np.add.reduceat(inv_d, ms)  # (M,)
    sR = np.add.reduceat(A1, ms, axis=0) / g[:, None]  # 1' W_m r per model
    WR = A1 - sm**2 * inv_d[:, None] * sR[layout.cell_model]
    a1 = inv_d / g[layout.cell_model]  # W_m 1
    fR = np.add.reduceat(sR, fs, axis=0)
    h = 1.0 + sf**2 * np.add.reduceat(np.add.reduceat(inv_d, ms) / g, fs)  # (F,)
    fam = layout.model_family[layout.cell_model]
    return WR - sf**2 * a1[:, None] * (fR / h[:, None])[fam]


def _cell_logits(
    layout: _Layout, grid: _Grid, wts: np.ndarray, y: np.ndarray, s2: np.ndarray
) -> np.ndarray:
    """Posterior mean of every cell's logit at the most probable grid point."""
    shape = (
        len(grid.sigma_cell),
        len(grid.sigma_model),
        len(grid.sigma_family),
        len(grid.sigma_delta),
    )
    ic, im, jf, jd = np.unravel_index(int(np.argmax(wts)), shape)
    theta = (grid.sigma_cell[ic], grid.sigma_model[im], grid.sigma_family[jf])
    X = layout.X
    VX = _vinv(layout, theta, s2, np.column_stack([X, y]))
    b = np.linalg.solve(X.T @ VX[:, :-1] + grid.lam0[jd], X.T @ VX[:, -1])
    return y - s2 * _vinv(layout, theta, s2, (y - X @ b)[:, None])[:, 0]


def _posterior(
    layout: _Layout, grid: _Grid, k: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, _Grid]:
    r"""Grid posterior of beta from binomial counts: empirical logits, then one Laplace step.

    The first pass approximates each cell's binomial likelihood by a normal around its
    empirical logit. Weighting cells by a variance computed from their own counts
    correlates weights with outcomes and biases the slope toward 0 when cells are small
    (with 30-40 answers per cell, by ~10% of the slope). The second pass re-centres each
    cell's normal approximation at its posterior mean logit :math:`\hat\eta`, with working
    response :math:`\hat\eta + (k - n\hat p)/(n\hat p(1-\hat p))` and variance
    :math:`1/(n\hat p(1-\hat p))` (a Laplace / penalised-quasi-likelihood step; Breslow &
    Clayton 1993, *JASA* 88, 9-25), on the part of the grid that carries posterior mass.
    """
    n = layout.n.astype(float)
    y, s2 = _empirical_logit(k, layout.n)
    wts, _, _ = _grid_posterior(layout, grid, y, s2)
    eta = _cell_logits(layout, grid, wts, y, s2)
    p = np.clip(expit(eta), 1e-6, 1 - 1e-6)
    w = n * p * (1.0 - p)
    sub = _restrict(grid, wts)
    wts, mu, var = _grid_posterior(layout, sub, eta + (k - n * p) / w, 1.0 / w)
    return wts, mu, var, sub


def _empirical_logit(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    y = np.log((k + 0.5) / (n - k + 0.5))
    return y, 1.0 / (k + 0.5) + 1.0 / (n - k + 0.5)


def _grid_posterior(
    layout: _Layout, grid: _Grid, y: np.ndarray, s2: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Posterior weights of the grid points and the conditional mean/variance of beta.

    The covariance of the empirical logits given theta is nested: family (sigma_f), model
    (sigma_m) and a diagonal (sigma_c^2 + s_i^2). Its inverse and log determinant follow
    from two rank-one (Sherman-Morrison) updates per model and per family, so only
    per-model and per-family sums of the cells are needed.
    """
    X, ms, fs = layout.X, layout.model_start, layout.family_start
    d = grid.sigma_cell[:, None] ** 2 + s2[None, :]  # (nc, N)
    w = 1.0 / d
    red = np.add.reduceat
    ld_cells = red(np.log(d), ms, axis=1)  # (nc, M)
    s1 = red(w, ms, axis=1)
    wX = w[:, :, None] * X[None]
    r1X = red(wX, ms, axis=1)  # (nc, M, p)
    r1y = red(w * y, ms, axis=1)
    p1XX = red(w[:, :, None, None] * layout.OXX[None], ms, axis=1)  # (nc, M, p, p)
    p1Xy = red(wX * y[None, :, None], ms, axis=1)
    p1yy = red(w * y * y, ms, axis=1)

    sm2 = grid.sigma_model[None, :, None] ** 2
    g = 1.0 + sm2 * s1[:, None, :]  # (nc, nm, M)
    a = sm2 / g
    qXX = p1XX[:, None] - a[..., None, None] * r1X[:, None, :, :, None] * r1X[:, None, :, None, :]
    qXy = p1Xy[:, None] - a[..., None] * r1X[:, None] * r1y[:, None, :, None]
    qyy = p1yy[:, None] - a * r1y[:, None] ** 2
    rX = r1X[:, None] / g[..., None]
    ry = r1y[:, None] / g
    sm = s1[:, None] / g
    ld = (ld_cells[:, None] + np.log(g)).sum(axis=2)  # (nc, nm)

    fXX = red(qXX, fs, axis=2)  # (nc, nm, F, p, p)
    fXy = red(qXy, fs, axis=2)
    fyy = red(qyy, fs, axis=2)
    frX = red(rX, fs, axis=2)
    fry = red(ry, fs, axis=2)
    fsm = red(sm, fs, axis=2)
    sf2 = grid.sigma_family[None, None, :, None] ** 2
    h = 1.0 + sf2 * fsm[:, :, None, :]  # (nc, nm, nf, F)
    b = sf2 / h
    QXX = fXX.sum(axis=2)[:, :, None] - np.einsum("ijlf,ijfa,ijfb->ijlab", b, frX, frX)
    QXy = fXy.sum(axis=2)[:, :, None] - np.einsum("ijlf,ijfa,ijf->ijla", b, frX, fry)
    Qyy = fyy.sum(axis=2)[:, :, None] - np.einsum("ijlf,ijf->ijl", b, fry**2)
    logdetV = ld[:, :, None] + np.log(h).sum(axis=3)  # (nc, nm, nf)

    nd, p = grid.lam0.shape[:2]
    # H = Q_XX + prior precision, laid out (p, p, G) so each entry is a contiguous vector
    Hc = (
        np.moveaxis(QXX, (3, 4), (0, 1))[..., None]
        + np.moveaxis(grid.lam0, 0, 2)[:, :, None, None, None, :]
    )
    Hc = Hc.reshape(p, p, -1)
    G = Hc.shape[-1]
    L = _batched_cholesky(Hc)
    vy = _forward_solve(
        L, np.broadcast_to(QXy[:, :, :, None], (*QXy.shape[:3], nd, p)).reshape(G, p)
    )
    vc = _forward_solve(L, np.broadcast_to(grid.c, (G, p)))
    logdetH = 2.0 * sum(np.log(L[j][j]) for j in range(p))
    quad = sum(v * v for v in vy)
    logml = -0.5 * (
        (logdetV[..., None] - grid.logdet_lam0 + Qyy[..., None]).ravel() + logdetH - quad
    )
    mu = sum(a * b for a, b in zip(vc, vy, strict=True))
    var = sum(a * a for a in vc)
    wts = np.exp(logml - logml.max())
    return wts / wts.sum(), mu, var


def _batched_cholesky(Hc: np.ndarray) -> list[list[np.ndarray]]:
    """Cholesky factors of a stack of small SPD matrices ``Hc`` (p, p, G), vectorised over G.

    Returns the lower triangle as nested lists ``L[i][j]`` (i >= j) of length-G vectors: for
    p of 2-20, column loops over contiguous vectors are far faster than LAPACK called once
    per matrix.
    """
    p = Hc.shape[0]
    L: list[list[np.ndarray]] = [[np.empty(0)] * (i + 1) for i in range(p)]
    for j in range(p):
        acc = Hc[j, j].copy()
        for k in range(j):
            acc -= L[j][k] * L[j][k]
        L[j][j] = np.sqrt(np.maximum(acc, 1e-300))
        for i in range(j + 1, p):
            acc = Hc[i, j].copy()
            for k in range(j):
                acc -= L[i][k] * L[j][k]
            L[i][j] = acc / L[j][j]
    return L


def _forward_solve(L: list[list[np.ndarray]], b: np.ndarray) -> list[np.ndarray]:
    """Solve ``L v = b`` for the factors of :func:`_batched_cholesky` and ``b`` (G, p)."""
    v: list[np.ndarray] = []
    for i in range(len(L)):
        acc = np.array(b[:, i], dtype=float)
        for k in range(i):
            acc -= L[i][k] * v[k]
        v.append(acc / L[i][i])
    return v


def _mixture_draws(
    wts: np.ndarray, mu: np.ndarray, var: np.ndarray, u: np.ndarray, z: np.ndarray
) -> np.ndarray:
    idx = np.searchsorted(np.cumsum(wts), u * (1.0 - 1e-12))
    idx = np.minimum(idx, len(wts) - 1)
    return mu[idx] + np.sqrt(var[idx]) * z


def fast_fit(
    cells: pl.DataFrame,
    *,
    rule: DecisionRule | None = None,
    seed: int = 0,
    draws: int = N_DRAWS,
    grid: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Approximate posterior of the scale slope ``beta`` and its decision (see module docstring).

    Parameters
    ----------
    cells
        Cells as the scale model takes them: ``model, family, task, x, n, k`` (rows with
        ``n == 0`` are ignored).
    rule
        Decision rule (default :class:`~analysis.hypotheses.DecisionRule`).
    seed
        Seed of the posterior draws handed to the rule.
    draws
        Number of posterior draws.
    grid
        Grid points per variance component (keys of :data:`GRID`).

    Returns
    -------
    dict
        What :func:`analysis.hypotheses.decide` returns (``mean``, ``sd``, ``hdi_low``,
        ``hdi_high``, ``prob_positive``, ``decision``, ...) plus ``sigma_posterior_mean``
        (posterior means of the variance components).

    Examples
    --------
    >>> from analysis.simulate import simulate_scale_cells
    >>> cells, truth = simulate_scale_cells(seed=3, beta=0.6)
    >>> fast_fit(cells)["decision"]
    'improves'
    """
    layout, k = _Layout.from_cells(cells)
    wts, mu, var, g = _posterior(layout, _Grid.make(len(layout.tasks), grid), k)
    rng = np.random.default_rng(seed)
    d = _mixture_draws(wts, mu, var, rng.random(draws), rng.standard_normal(draws))
    out = decide(d, rule or DecisionRule(), n_models=len(layout.models))
    shape = (len(g.sigma_cell), len(g.sigma_model), len(g.sigma_family), len(g.sigma_delta))
    w4 = wts.reshape(shape)
    out["sigma_posterior_mean"] = {
        "sigma_cell": float(w4.sum(axis=(1, 2, 3)) @ g.sigma_cell),
        "sigma_model": float(w4.sum(axis=(0, 2, 3)) @ g.sigma_model),
        "sigma_family": float(w4.sum(axis=(0, 1, 3)) @ g.sigma_family),
        "sigma_delta": float(w4.sum(axis=(0, 1, 2)) @ g.sigma_delta),
    }
    return out


# --------------------------------------------------------------------------- simulation


@dataclass
class _Base:
    """The random numbers of one simulation, shared by every true slope."""

    z_family: np.ndarray
    z_model: np.ndarray
    z_cell: np.ndarray
    z_task_slope: np.ndarray
    u_count: np.ndarray
    u_draw: np.ndarray
    z_draw: np.ndarray
    u_cluster: np.ndarray


def _base_draws(seed: int, sim: int, layout: _Layout, draws: int) -> _Base:
    rng = np.random.default_rng([seed, sim])
    return _Base(
        z_family=rng.standard_normal(len(layout.families)),
        z_model=rng.standard_normal(len(layout.models)),
        z_cell=rng.standard_normal(layout.n_cells),
        z_task_slope=rng.standard_normal(len(layout.tasks)),
        u_count=rng.random(layout.n_cells),
        u_draw=rng.random(draws),
        z_draw=rng.standard_normal(draws),
        u_cluster=rng.random(layout.n_cells),  # drawn last: earlier streams do not depend on it
    )


def _simulate_k(layout: _Layout, design: Design, slope: float, base: _Base) -> np.ndarray:
    alpha = logit(np.array([t.accuracy for t in design.tasks]))
    delta = design.sigma_task_slope * (base.z_task_slope - base.z_task_slope.mean())
    u = design.sigma_family * base.z_family
    v = design.sigma_model * base.z_model
    m, t = layout.cell_model, layout.cell_task
    eta = (
        alpha[t]
        + (slope + delta[t]) * layout.x
        + u[layout.model_family[m]]
        + v[m]
        + design.sigma_cell * base.z_cell
    )
    p = expit(eta)
    if layout.rho is not None and np.any(layout.rho > 0):
        # beta-binomial cell: answers share a propensity pi ~ Beta(p, intra-class corr. rho)
        rho = np.clip(layout.rho, 1e-9, 1 - 1e-9)
        conc = 1.0 / rho - 1.0
        pi = betaincinv(p * conc, (1.0 - p) * conc, base.u_cluster)
        p = np.where(layout.rho > 0, pi, p)
    k = binom.ppf(base.u_count, layout.n, p)
    return np.clip(np.nan_to_num(k, nan=0.0), 0, layout.n).astype(np.int64)


def simulate_cells(design: Design, slope: float, *, seed: int, sim: int = 0) -> pl.DataFrame:
    """One simulated data set of ``design`` at true slope ``slope``, as scale-model cells.

    The same ``(seed, sim)`` gives the same random effects at every slope (common random
    numbers); :func:`run_power` fits exactly these data sets.

    Returns
    -------
    polars.DataFrame
        ``model, family, task, x, n, k``: the input of ``analysis.fit.fit("scale", ...)``
        and of :func:`fast_fit`.

    Examples
    --------
    >>> cells = simulate_cells(default_design(), 0.3, seed=1)
    >>> cells.columns, cells.height
    (['model', 'family', 'task', 'x', 'n', 'k'], 42)
    """
    layout = _Layout.from_design(design)
    k = _simulate_k(layout, design, slope, _base_draws(seed, sim, layout, 0))
    return pl.DataFrame(
        {
            "model": [layout.models[i] for i in layout.cell_model],
            "family": [layout.families[layout.model_family[i]] for i in layout.cell_model],
            "task": [layout.tasks[i] for i in layout.cell_task],
            "x": layout.x,
            "n": layout.n,
            "k": k,
        }
    )


# --------------------------------------------------------------------------- power


class _Ticker:
    """Progress over ``total`` fits: a rich bar, a callback, or nothing."""

    def __init__(self, progress: bool | Progress, total: int, label: str) -> None:
        self.total, self.done = total, 0
        self._bar: Any = None
        self._cb: Progress | None = None
        if callable(progress):
            self._cb = progress
        elif progress:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn("[dim]selfmodel[/dim] {task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._bar.start()
            self._task = self._bar.add_task(label, total=total)

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
        if self._cb is not None:
            self._cb(self.done, self.total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def _sweep(
    design: Design,
    slopes: Sequence[float],
    *,
    sims: int,
    seed: int,
    ticker: _Ticker,
    grid: Mapping[str, int] | None = None,
) -> list[dict[str, Any]]:
    layout = _Layout.from_design(design)
    g = _Grid.make(len(layout.tasks), grid)
    rule = design.rule
    n_models = len(layout.models)
    counts = [dict.fromkeys(OUTCOMES, 0) for _ in slopes]
    means = np.zeros((len(slopes), sims))
    sds = np.zeros((len(slopes), sims))
    covered = np.zeros((len(slopes), sims), dtype=bool)
    for s in range(sims):
        base = _base_draws(seed, s, layout, N_DRAWS)
        for j, slope in enumerate(slopes):
            k = _simulate_k(layout, design, slope, base)
            wts, mu, var, _ = _posterior(layout, g, k)
            d = decide(
                _mixture_draws(wts, mu, var, base.u_draw, base.z_draw), rule, n_models=n_models
            )
            counts[j][d["decision"]] = counts[j].get(d["decision"], 0) + 1
            means[j, s], sds[j, s] = d["mean"], d["sd"]
            covered[j, s] = d["hdi_low"] <= slope <= d["hdi_high"]
            ticker.advance()
    out = []
    for j, slope in enumerate(slopes):
        row: dict[str, Any] = {"slope": float(slope), "sims": sims}
        for o in OUTCOMES:
            p = counts[j][o] / sims
            row[f"p_{o}"] = p
            row[f"se_{o}"] = math.sqrt(p * (1 - p) / sims)
        row["mean_estimate"] = float(means[j].mean())
        row["mean_posterior_sd"] = float(sds[j].mean())
        row["hdi_coverage"] = float(covered[j].mean())
        out.append(row)
    return out


def _mde(
    results: Sequence[Mapping[str, Any]], target: float = TARGET_POWER
) -> tuple[float | None, float | None]:
    """Smallest swept slope > 0 with P(improves) >= target, and a linear interpolation of it.

    The interpolation uses the swept slope just below (``None`` when there is none, or when
    it already reaches the target).
    """
    rows = sorted(results, key=lambda r: r["slope"])
    for i, r in enumerate(rows):
        if r["slope"] > 0 and r["p_improves"] >= target:
            interp = None
            if i > 0 and rows[i - 1]["p_improves"] < target:
                lo, hi = rows[i - 1], r
                f = (target - lo["p_improves"]) / (hi["p_improves"] - lo["p_improves"])
                interp = lo["slope"] + f * (hi["slope"] - lo["slope"])
            return r["slope"], interp
    return None, None


def normal_theory_mde(
    posterior_sd: float, rule: DecisionRule, power: float = TARGET_POWER
) -> float:
    r"""Slope at which ``improves`` has probability ``power`` if the estimate is normal.

    ``improves`` needs the HDI above the ROPE: estimate :math:`> r + z_{(1+h)/2}\,s`; with the
    estimate :math:`\sim N(\beta, s^2)` that has probability ``power`` at
    :math:`\beta = r + (z_{(1+h)/2} + z_{power})\,s`. A quick guide: the simulation, not this,
    is the answer (posterior sds of hierarchical slopes are not constant across data sets).

    Examples
    --------
    >>> round(normal_theory_mde(0.07, DecisionRule()), 3)
    0.291
    """
    return float(rule.rope + (norm.ppf(0.5 + rule.hdi_prob / 2) + norm.ppf(power)) * posterior_sd)


def sweep_slope(power: Mapping[str, Any]) -> float:
    """The slope for :func:`models_vs_items`: where this design has 50% power.

    There the power curve is steepest, so a change of design shows most. Falls back to the
    minimum detectable slope, then to the largest swept slope.
    """
    rows = sorted(power["results"], key=lambda r: r["slope"])
    for lo, hi in zip(rows, rows[1:], strict=False):
        if lo["p_improves"] < 0.5 <= hi["p_improves"]:
            f = (0.5 - lo["p_improves"]) / (hi["p_improves"] - lo["p_improves"])
            return float(lo["slope"] + f * (hi["slope"] - lo["slope"]))
    return float(power.get("mde_80") or rows[-1]["slope"])


def _method(grid: Mapping[str, int] | None) -> dict[str, Any]:
    return {
        "simulation": "cell-level binomial draws from the scale model's generative form; items and "
        "repeats enter through the effective n (Kish design effect); common random "
        "numbers across slopes",
        "fit": "empirical-logit Gaussian approximation of the scale model, fixed effects "
        "integrated exactly, variance components on a grid at prior mid-quantiles (analysis.power)",
        "grid": {**GRID, **(grid or {})},
        "posterior_draws": N_DRAWS,
        "priors": "models.scale.DEFAULT_PRIORS",
        "decision": "analysis.hypotheses.decide",
        "validation": "bench/power_validation.py -> bench/results/power_validation.json",
    }


def run_power(
    design: Design,
    *,
    slopes: Sequence[float] = DEFAULT_SLOPES,
    sims: int = 500,
    seed: int = DEFAULT_SEED,
    progress: bool | Progress = False,
    grid: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Probability of each decision at each true slope, and the minimum detectable slope.

    Parameters
    ----------
    design
        The study design (:func:`load_design`, :func:`design_from_template`,
        :func:`default_design`).
    slopes
        True slopes (logits per unit of the scale variable).
    sims
        Simulated data sets per slope.
    seed
        Seed; the same seed gives the same answer.
    progress
        ``True`` for a progress bar on stderr, a callable ``(done, total)``, or ``False``.
    grid
        Override grid sizes of the approximate fit (keys of :data:`GRID`).

    Returns
    -------
    dict
        ``design``, ``rule``, ``method``, ``seed``, ``sims``, ``results`` (one entry per
        slope, sorted: ``slope``, ``p_improves``, ``p_no_credible_effect``,
        ``p_practically_null``, ``p_worsens``, ``se_*`` (binomial Monte Carlo standard
        errors), ``sims``, ``mean_estimate``, ``mean_posterior_sd``, ``hdi_coverage``),
        ``mde_80`` (smallest swept slope with P(improves) >= 0.8, or ``None``) and
        ``mde_80_interpolated`` (linear interpolation between the bracketing slopes).

    Examples
    --------
    >>> p = run_power(default_design(), slopes=[0.0, 0.5], sims=20, seed=1)
    >>> [r["slope"] for r in p["results"]], p["results"][1]["p_improves"] > 0.5
    ([0.0, 0.5], True)
    """
    if sims < 1:
        raise InputError(f"--sims must be at least 1 (got {sims}).")
    slopes = sorted({float(s) for s in slopes})
    if not slopes or not all(math.isfinite(s) for s in slopes):
        raise InputError("give at least one finite slope (--slopes 0 0.2 0.4).")
    if len(design.models) < design.rule.min_models:
        raise InputError(
            f"the design has {len(design.models)} model(s); the decision rule needs at least "
            f"{design.rule.min_models} to estimate a slope. Add models."
        )
    ticker = _Ticker(
        progress, sims * len(slopes), f"power: {len(slopes)} slopes x {sims} simulations"
    )
    try:
        results = _sweep(design, slopes, sims=sims, seed=seed, ticker=ticker, grid=grid)
    finally:
        ticker.close()
    mde, mde_i = _mde(results)
    return {
        "design": design.as_dict(),
        "rule": design.rule.as_dict(),
        "units": design.units,
        "method": _method(grid),
        "seed": seed,
        "sims": sims,
        "target_power": TARGET_POWER,
        "results": results,
        "mde_80": mde,
        "mde_80_interpolated": mde_i,
    }


def _with_models_per_family(design: Design, per_family: int) -> Design:
    """The design with ``per_family`` models in every family.

    They are spread evenly in log size over the family's size range (the design-wide range
    for a family with a single size).
    """
    xs_all = [x for *_, x in design.models]
    models = []
    for fam in design.families:
        xs = [x for _, f, x in design.models if f == fam]
        lo, hi = (min(xs), max(xs)) if len(xs) > 1 else (min(xs_all), max(xs_all))
        for i, x in enumerate(np.linspace(lo, hi, per_family)):
            models.append((f"{fam}-{i + 1}", fam, float(x)))
    return replace(design, models=tuple(models))


def models_vs_items(
    design: Design,
    *,
    slope: float,
    models_per_family: Sequence[int] = (2, 3, 4, 6),
    items: Sequence[int] = (50, 150, 500, 1500),
    sims: int = 200,
    seed: int = DEFAULT_SEED,
    progress: bool | Progress = False,
    grid: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Power at one true slope as models per family and items per task change.

    Every family gets ``m`` models spread evenly (in log size) over its size range, and
    every task ``i`` items; everything else stays as in ``design``.

    Returns
    -------
    dict
        ``slope``, ``models_per_family``, ``items``, ``sims`` and ``cells``: one entry per
        combination with ``models_per_family``, ``items``, ``n_models``, ``p_improves``
        (at ``slope``), ``se_improves``, ``mean_posterior_sd`` and ``mde_80_normal_theory``
        (:func:`normal_theory_mde` of that sd).
    """
    total = len(models_per_family) * len(items) * sims
    ticker = _Ticker(
        progress, total, f"models vs items: {len(models_per_family) * len(items)} designs x {sims}"
    )
    cells = []
    try:
        for m in models_per_family:
            dm = _with_models_per_family(design, int(m))
            for i in items:
                di = replace(dm, tasks=tuple(replace(t, items=int(i)) for t in dm.tasks))
                r = _sweep(di, [slope], sims=sims, seed=seed, ticker=ticker, grid=grid)[0]
                cells.append(
                    {
                        "models_per_family": int(m),
                        "items": int(i),
                        "n_models": len(di.models),
                        "p_improves": r["p_improves"],
                        "se_improves": r["se_improves"],
                        "mean_posterior_sd": r["mean_posterior_sd"],
                        "mde_80_normal_theory": normal_theory_mde(r["mean_posterior_sd"], di.rule),
                    }
                )
    finally:
        ticker.close()
    return {
        "slope": float(slope),
        "models_per_family": [int(m) for m in models_per_family],
        "items": [int(i) for i in items],
        "sims": sims,
        "cells": cells,
    }


# --------------------------------------------------------------------------- after a fit


def mde_from_fit(
    results: Mapping[str, Any],
    *,
    sims: int = 100,
    seed: int | None = None,
    progress: bool | Progress = False,
    cache_dir: Path | str | None = None,
) -> dict[str, Any]:
    r"""What the fitted design could detect: the slope found with 80% power.

    The design is the one in ``results`` (models in the slope, cells' readable n, task
    accuracies) and the variance components are the fit's posterior means
    (:func:`design_from_results`). A pilot of ``sims // 3`` data sets at slope 0 gives the
    expected posterior sd :math:`\bar s` of the slope and the normal-theory detectable slope
    :math:`r + (z_{(1+h)/2} + z_{0.8})\,\bar s` (ROPE :math:`r`, HDI probability :math:`h`);
    the power curve is then simulated at multiples of it and interpolated at 0.8.

    Parameters
    ----------
    results
        A ``results.json`` dict carrying ``variance_components`` (posterior means of
        ``sigma_family``, ``sigma_model``, ``sigma_cell`` and ``sigma_delta``).
    sims
        Simulated data sets per slope.
    seed
        Seed (default: the run's seed in ``results["settings"]``).
    progress
        As in :func:`run_power`.
    cache_dir
        Folder to save the result in (the run's fits folder) and reuse it from while the
        design read from ``results`` (:func:`design_from_results`), ``sims``, ``seed``, the
        code of this module and of ``analysis/hypotheses.py`` and the package versions are
        unchanged (:func:`analysis.fit.cached_json`); ``None`` always simulates.

    Returns
    -------
    dict
        ``mde_80`` (interpolated; ``None`` when even the largest swept slope stays below
        80%), ``mde_80_mc_se`` (its Monte Carlo standard error), ``mde_80_normal_theory``,
        ``expected_posterior_sd``,
        ``p_practically_null_at_zero`` (chance of a ``practically_null`` verdict when the
        true slope is 0), ``sd_needed_for_practically_null`` (the posterior sd at which the
        HDI fits inside the ROPE), ``plugin_sd`` and ``plugin_sd_unlimited_items`` (the
        slope's posterior sd at the fitted variance components, as observed and with
        unlimited items per cell: how much more items could help), ``power_curve``, ``design``, ``rule``, ``units``,
        ``sims``, ``seed`` and ``method``.
    """
    seed = int(seed if seed is not None else (results.get("settings") or {}).get("seed", DEFAULT_SEED))
    design = design_from_results(results)
    if cache_dir is not None:
        from analysis import hypotheses
        from analysis.fit import cached_json, package_versions, source_sha256

        key = {
            "design": repr(design),  # all that is read from results (plain values: exact)
            "sims": sims,
            "seed": seed,
            "sources": source_sha256([__file__, hypotheses.__file__]),
            "versions": package_versions(("scipy",)),
        }
        return cached_json(
            cache_dir, "mde_from_fit", key,
            lambda: mde_from_fit(results, sims=sims, seed=seed, progress=progress),
        )
    rule = design.rule
    pilot_sims = max(20, sims // 3)
    z_hdi = float(norm.ppf(0.5 + rule.hdi_prob / 2))
    ticker = _Ticker(progress, pilot_sims + 6 * sims, "what this design could detect")
    try:
        pilot = _sweep(design, [0.0], sims=pilot_sims, seed=seed, ticker=ticker)[0]
        s_bar = pilot["mean_posterior_sd"]
        normal = normal_theory_mde(s_bar, rule)
        slopes = [round(normal * f, 4) for f in (0.6, 0.8, 0.9, 1.0, 1.15, 1.4)]
        curve = _sweep(design, slopes, sims=sims, seed=seed, ticker=ticker)
    finally:
        ticker.close()
    grid_mde, interp = _mde(curve)
    if grid_mde is not None and interp is None:
        interp = grid_mde  # the smallest swept slope already has >= 80% power
    mc_se = None
    if interp is not None:
        # delta method: se of P(improves) at 0.8 over the local slope of the power curve
        rows = sorted(curve, key=lambda r: r["slope"])
        i = next(i for i, r in enumerate(rows) if r["slope"] >= interp)
        lo, hi = rows[max(0, i - 1)], rows[min(len(rows) - 1, max(i, 1))]
        rise = (hi["p_improves"] - lo["p_improves"]) / max(hi["slope"] - lo["slope"], 1e-12)
        if rise > 0:
            mc_se = math.sqrt(TARGET_POWER * (1 - TARGET_POWER) / sims) / rise
    return {
        "target_power": TARGET_POWER,
        "mde_80": interp,
        "mde_80_mc_se": mc_se,
        "mde_80_normal_theory": normal,
        "expected_posterior_sd": s_bar,
        "p_practically_null_at_zero": pilot["p_practically_null"],
        "p_improves_at_zero": pilot["p_improves"],
        "sd_needed_for_practically_null": rule.rope / z_hdi,
        "plugin_sd": _plugin_sd(design),
        "plugin_sd_unlimited_items": _plugin_sd(design, unlimited_items=True),
        "power_curve": [
            {
                k: r[k]
                for k in (
                    "slope",
                    "p_improves",
                    "se_improves",
                    "p_credibly_positive",
                    "p_no_credible_effect",
                    "p_practically_null",
                    "mean_posterior_sd",
                )
            }
            for r in curve
        ],
        "design": {
            "n_models": len(design.models),
            "n_families": len(design.families),
            "tasks": [
                {"task": t.name, "n_per_cell": t.items, "accuracy": t.accuracy}
                for t in design.tasks
            ],
            "sigma_family": design.sigma_family,
            "sigma_model": design.sigma_model,
            "sigma_cell": design.sigma_cell,
            "sigma_task_slope": design.sigma_task_slope,
        },
        "rule": rule.as_dict(),
        "units": design.units,
        "sims": sims,
        "seed": seed,
        "method": "analysis.power.mde_from_fit: simulated from the fitted variance components "
        "(posterior means), each data set fitted by the approximate fit of analysis.power",
    }


# --------------------------------------------------------------------------- output


def power_table(power: Mapping[str, Any]) -> Any:
    """A rich table of the decision probabilities per true slope."""
    from rich.table import Table

    t = Table(
        title=f"decision probabilities by true slope ({power['units']}), "
        f"{power['sims']} simulations each"
    )
    for col in (
        "slope",
        "improves",
        "no credible effect",
        "practically null",
        "worsens",
        "mean post. sd",
    ):
        t.add_column(col, justify="right")
    for r in power["results"]:
        t.add_row(
            f"{r['slope']:g}",
            *(f"{r[f'p_{o}']:.2f}" for o in OUTCOMES),
            f"{r['mean_posterior_sd']:.3f}",
        )
    return t


def summary_lines(power: Mapping[str, Any]) -> list[str]:
    """Plain-text conclusions of a power run (for the console)."""
    rule = power["rule"]
    lines = []
    if power["mde_80"] is None:
        top = max(r["slope"] for r in power["results"])
        lines.append(
            f"no swept slope up to {top:g} is detected ('improves') with 80% power; "
            "try larger --slopes or a bigger design"
        )
    else:
        extra = (
            f" (interpolated {power['mde_80_interpolated']:.3f})"
            if power.get("mde_80_interpolated") is not None
            else ""
        )
        lines.append(
            f"minimum detectable slope at 80% power: {power['mde_80']:g}{extra} {power['units']}"
        )
    zero = [r for r in power["results"] if r["slope"] == 0.0]
    if zero:
        z = zero[0]
        lines.append(
            f"at a true slope of 0: P(practically_null) = {z['p_practically_null']:.2f}, "
            f"P(improves) = {z['p_improves']:.2f} (false-positive rate), "
            f"ROPE +/-{rule['rope']:g}"
        )
    mvi = power.get("models_vs_items")
    if mvi:
        c = mvi["cells"]
        lo_m, hi_m = min(mvi["models_per_family"]), max(mvi["models_per_family"])
        lo_i, hi_i = min(mvi["items"]), max(mvi["items"])

        def mde(m: int, i: int) -> float:
            return next(
                x["mde_80_normal_theory"]
                for x in c
                if x["models_per_family"] == m and x["items"] == i
            )

        mid_i = sorted(mvi["items"])[len(mvi["items"]) // 2]
        lines.append(
            f"more items: with {lo_m} models per family, {lo_i} -> {hi_i} items per task moves the "
            f"detectable slope {mde(lo_m, lo_i):.2f} -> {mde(lo_m, hi_i):.2f}; more models: at "
            f"{mid_i} items, {lo_m} -> {hi_m} models per family moves it {mde(lo_m, mid_i):.2f} -> "
            f"{mde(hi_m, mid_i):.2f} (80% power, normal theory from the simulated posterior sds)"
        )
    return lines


def plot_power(power: Mapping[str, Any], path: Path | str) -> Path:
    """Plot the decision probabilities against the true slope (and models vs items).

    Parameters
    ----------
    power
        What :func:`run_power` returns, optionally with ``models_vs_items``.
    path
        PNG file to write (atomically).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from analysis import atomic

    mvi = power.get("models_vs_items")
    ncol = 2 if mvi else 1
    fig, axes = plt.subplots(1, ncol, figsize=(5.6 * ncol, 3.9), squeeze=False)
    ax = axes[0][0]
    res = sorted(power["results"], key=lambda r: r["slope"])
    xs = np.array([r["slope"] for r in res])
    rope = power["rule"]["rope"]
    ax.axvspan(-rope, rope, color="0.92", zorder=0, label=f"ROPE ±{rope:g}")
    colours = {
        "improves": "#0072B2",
        "credibly_positive": "#56B4E9",
        "no_credible_effect": "#999999",
        "practically_null": "#009E73",
        "credibly_negative": "#E69F00",
        "worsens": "#D55E00",
    }
    for o in OUTCOMES:
        ps = np.array([r[f"p_{o}"] for r in res])
        if o in ("worsens", "credibly_negative") and not ps.any():
            continue
        se = np.array([r[f"se_{o}"] for r in res])
        ax.errorbar(
            xs,
            ps,
            yerr=2 * se,
            marker="o",
            ms=4,
            lw=1.6,
            capsize=2,
            color=colours[o],
            label=o.replace("_", " "),
        )
    ax.axhline(TARGET_POWER, color="0.3", lw=0.8, ls=":")
    if power.get("mde_80") is not None:
        m = power.get("mde_80_interpolated") or power["mde_80"]
        ax.axvline(m, color=colours["improves"], lw=0.8, ls="--")
        ax.annotate(
            f"80% power\nat {m:.2f}",
            (m, 0.45),
            xytext=(6, 0),
            textcoords="offset points",
            fontsize=8,
        )
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(f"true slope ({power['units']})")
    ax.set_ylabel("probability of decision")
    d = power["design"]
    ax.set_title(
        f"{d['n_models']} models in {d['n_families']} families, {len(d['tasks'])} tasks; "
        f"{power['sims']} sims",
        fontsize=9,
    )
    ax.legend(fontsize=7, frameon=False, loc="center right")
    if mvi:
        ax2 = axes[0][1]
        for i, m in enumerate(mvi["models_per_family"]):
            row = sorted(
                (c for c in mvi["cells"] if c["models_per_family"] == m), key=lambda c: c["items"]
            )
            its = [c["items"] for c in row]
            ps = np.array([c["p_improves"] for c in row])
            se = np.array([c["se_improves"] for c in row])
            ax2.errorbar(
                its,
                ps,
                yerr=2 * se,
                marker="o",
                ms=4,
                lw=1.4,
                capsize=2,
                color=plt.get_cmap("viridis")(i / max(1, len(mvi["models_per_family"]) - 1)),
                label=f"{m} per family ({row[0]['n_models']} models)",
            )
        ax2.axhline(TARGET_POWER, color="0.3", lw=0.8, ls=":")
        ax2.set_xscale("log")
        ax2.set_ylim(-0.02, 1.02)
        ax2.set_xlabel("items per task")
        ax2.set_ylabel("P(improves)")
        ax2.set_title(f"more models vs more items, true slope {mvi['slope']:.3g}", fontsize=9)
        ax2.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    path = Path(path)
    atomic.write_with(path, lambda p: fig.savefig(p, dpi=120, format="png"))
    plt.close(fig)
    return path


def write_power(
    power: Mapping[str, Any], out: Path | str, *, design: Design | None = None
) -> dict[str, Path]:
    """Write ``OUT/power.json`` and ``OUT/power.png`` (and ``OUT/design.toml`` when given).

    ``power.json`` is a deterministic function of the design, slopes, sims and seed (no
    timings), so a rerun with the same seed is byte-identical.
    """
    from analysis import atomic
    from analysis.results import rounded

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "power.json", "plot": out / "power.png"}
    atomic.write_json(paths["json"], rounded(dict(power)))
    plot_power(power, paths["plot"])
    if design is not None:
        paths["design"] = out / "design.toml"
        atomic.write_text(paths["design"], design_to_toml(design))
    return paths
