r"""Frequentist cross-checks of the scale effect (statsmodels), with models as the unit.

Every function takes the cells of :func:`selfmodel.records.cells.build_cells` (columns ``model``,
``family``, ``task``, ``n``, ``k``, ``x``) and uses the cells whose model has the scale
variable (``x`` not null) and at least one readable prediction, exactly as the Bayesian fit
does. All results are JSON-serialisable dicts (floats, ints, bools, strings, ``None``).

Estimands, methods with their sources, the smallest designs each method needs and what none
of them model: ``docs/frequentist.md``.
"""

from __future__ import annotations

from selfmodel.analyses.frequentist.crosscheck import (
    WIDTH_RATIO_OK,
    crosscheck_table,
)
from selfmodel.analyses.frequentist.glm import (
    DEFAULT_LEVEL,
    MIN_MODELS,
    NUMERICAL_ERRORS,
    glm_slope,
    usable_cells,
)
from selfmodel.analyses.frequentist.permutation import (
    correlations,
    permutation_slope_test,
    permutation_test,
)
from selfmodel.analyses.frequentist.run import (
    holm,
    run_frequentist,
)
from selfmodel.analyses.frequentist.two_stage import (
    meta_regression,
    two_stage,
)
from selfmodel.analyses.frequentist.wild_bootstrap import (
    ENUMERATE_MAX,
    MIN_CLUSTERS_WILD,
    WEBB_POINTS,
    Weights,
    wild_bootstrap,
)

__all__ = [
    "DEFAULT_LEVEL",
    "MIN_MODELS",
    "MIN_CLUSTERS_WILD",
    "NUMERICAL_ERRORS",
    "WEBB_POINTS",
    "ENUMERATE_MAX",
    "Weights",
    "usable_cells",
    "glm_slope",
    "wild_bootstrap",
    "meta_regression",
    "two_stage",
    "correlations",
    "permutation_slope_test",
    "permutation_test",
    "holm",
    "run_frequentist",
    "WIDTH_RATIO_OK",
    "crosscheck_table",
]
