r"""Study design and power: what a design can detect, and what a null verdict rules out.

A scaling study is only as good as the slope it can detect. This module answers two
questions with the scale model of ``models/scale.py`` and the decision rule of
:mod:`selfmodel.decisions.hypotheses`:

* **before** the compute is spent (``selfmodel power``): for a design (families and their
  sizes, tasks with items and expected accuracy, repeats, variance components), the
  probability of each decision at a range of true slopes, the minimum detectable slope at
  80% power, and how power changes with more models versus more items;
* **after** a fit (:func:`mde_from_fit`, the report's "what this study could detect"
  section): the slope the fitted design would have detected with 80% power, computed from
  the fitted variance components, so that ``no_credible_effect`` is read correctly.

The generative model, the effective n of items and repeats, the fast approximate fit and its
random numbers: ``docs/power.md``; the modules: ``docs/stages.md``.
"""

from __future__ import annotations

from selfmodel.power.after_fit import (
    mde_from_fit,
)
from selfmodel.power.approximate_fit import (
    CellLayout as CellLayout,
)
from selfmodel.power.approximate_fit import (
    PosteriorGrid as PosteriorGrid,
)
from selfmodel.power.approximate_fit import (
    batched_cholesky as batched_cholesky,
)
from selfmodel.power.approximate_fit import (
    cell_logits as cell_logits,
)
from selfmodel.power.approximate_fit import (
    empirical_logit as empirical_logit,
)
from selfmodel.power.approximate_fit import (
    fast_fit,
)
from selfmodel.power.approximate_fit import (
    forward_solve as forward_solve,
)
from selfmodel.power.approximate_fit import (
    grid_posterior as grid_posterior,
)
from selfmodel.power.approximate_fit import (
    posterior_of as posterior_of,
)
from selfmodel.power.approximate_fit import (
    vinv as vinv,
)
from selfmodel.power.design import (
    DEFAULT_SLOPES,
    Design,
    Task,
    default_design,
)
from selfmodel.power.design import (
    GRID as GRID,
)
from selfmodel.power.design import (
    N_DRAWS as N_DRAWS,
)
from selfmodel.power.design import (
    OUTCOMES as OUTCOMES,
)
from selfmodel.power.design import (
    TARGET_POWER as TARGET_POWER,
)
from selfmodel.power.design import (
    Progress as Progress,
)
from selfmodel.power.design import (
    sdt_accuracy as sdt_accuracy,
)
from selfmodel.power.design_file import (
    DESIGN_EXAMPLE as DESIGN_EXAMPLE,
)
from selfmodel.power.design_file import (
    design_to_toml,
    load_design,
)
from selfmodel.power.design_from_data import (
    design_from_results,
    design_from_template,
)
from selfmodel.power.output import (
    plot_power,
    power_table,
    summary_lines,
    write_power,
)
from selfmodel.power.simulator import (
    base_draws as base_draws,
)
from selfmodel.power.simulator import (
    simulate_cells,
)
from selfmodel.power.simulator import (
    simulate_k as simulate_k,
)
from selfmodel.power.sweep import (
    mde_of as mde_of,
)
from selfmodel.power.sweep import (
    models_vs_items,
    normal_theory_mde,
    run_power,
    sweep_slope,
)
from selfmodel.power.sweep import (
    sweep_of as sweep_of,
)

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
