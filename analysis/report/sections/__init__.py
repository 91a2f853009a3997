"""The report's code: a module per section of ``reports/self_modeling.qmd``, shared helpers in ``common``.

The report's cells stay short: each calls one function of a section module with the loaded
results (:func:`load`) and prints the Markdown it returns or shows the figure it draws.
Every function reads saved results only; none fits or samples.

A new section is a module here with a small ``__all__`` (its blocks: ``(rep) -> str`` for text,
``(rep) -> Figure | None`` for a figure), imported below, and cells in the ``.qmd`` that call
it; ``tests/report/test_sections.py`` runs every such block on a saved results file by itself.
"""

from selfmodel.report.sections import (
    appendix,
    contrasts,
    crosscheck,
    data,
    descriptives,
    detectable,
    hypotheses,
    missingness,
    model,
    operating_characteristics,
    privileged,
    reliability,
    reproduce,
    robustness,
    scaling,
    self_other,
    skill,
    training,
    verdict,
)
from selfmodel.report.sections.common import Report, load

__all__ = [
    "Report", "appendix", "contrasts", "crosscheck", "data", "descriptives", "detectable", "hypotheses",
    "load", "missingness", "model", "operating_characteristics", "privileged", "reliability", "reproduce", "robustness",
    "scaling", "self_other", "skill", "training", "verdict",
]
