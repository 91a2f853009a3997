"""Repository paths and the default seed, defined once.

Every module that needs a file of the checkout (the default data, the hypotheses file, the
report source) or the default seed imports it from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

#: The checkout's root folder (the parent of ``analysis/``).
REPO_ROOT: Final = Path(__file__).resolve().parents[1]
#: The embedded default data set (``selfmodel simulate --out data_raw``).
DEFAULT_DATA: Final = REPO_ROOT / "data_raw"
#: The declared hypotheses ``selfmodel run`` evaluates unless ``--hypotheses`` says otherwise.
DEFAULT_HYPOTHESES_FILE: Final = REPO_ROOT / "hypotheses.toml"
#: The report's Quarto source.
REPORT_QMD: Final = REPO_ROOT / "reports" / "self_modeling.qmd"
#: Package data shipped with ``analysis`` (e.g. the calibration study's committed summary).
PACKAGE_DATA: Final = Path(__file__).resolve().parent / "data"

#: The default seed of every command (sampling, simulation, power).
DEFAULT_SEED: Final = 20261130
