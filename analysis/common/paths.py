"""Package and checkout paths and the default seed, defined once.

Files the package ships (the default hypotheses file, the report sources and styles, the
operating-characteristics summaries) are found with :mod:`importlib.resources`, so an installed wheel
finds them wherever it is run from; they never depend on the working directory or on a
checkout. Only :data:`DEFAULT_DATA` (the embedded default data set) and :data:`REPO_ROOT`
refer to the checkout: a wheel does not ship the data, and ``selfmodel run`` then needs a folder.
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any, Final


def package_path(package: str, *parts: str) -> Path:
    """A file or folder shipped inside ``package``, as a file-system path.

    The package is installed as ordinary files (wheel or editable install), so the resource
    is a real path: pandoc and typst read the templates by name.
    """
    return Path(str(files(package).joinpath(*parts)))


#: This package's import name (``selfmodel`` once installed).
PACKAGE: Final = __name__.split(".")[0]
#: The checkout's root folder (the parent of ``analysis/``); meaningful only in a checkout.
REPO_ROOT: Final = Path(__file__).resolve().parents[2]
#: The embedded default data set (``selfmodel simulate --out data_raw``), in a checkout.
DEFAULT_DATA: Final = REPO_ROOT / "data_raw"
#: The package's folder (``analysis/`` in a checkout, ``site-packages/selfmodel`` installed).
PACKAGE_DIR: Final = package_path(PACKAGE)
#: Package data shipped with the package (the operating-characteristics summaries, the hypotheses).
PACKAGE_DATA: Final = PACKAGE_DIR / "data"
#: The declared hypotheses ``selfmodel run`` evaluates unless ``--hypotheses`` says otherwise
#: (package data; in the checkout ``analysis/data/hypotheses.toml``).
DEFAULT_HYPOTHESES_FILE: Final = PACKAGE_DATA / "hypotheses.toml"
#: Folder of the report sources, templates and styles (package ``<package>.reports``).
REPORTS_DIR: Final = package_path(f"{PACKAGE}.reports")
#: The report's Quarto source.
REPORT_QMD: Final = REPORTS_DIR / "self_modeling.qmd"

#: The default seed of every command (sampling, simulation, power).
DEFAULT_SEED: Final = 20261130


def shipped_study(path: Path, what: str = "operating-characteristics study") -> dict[str, Any]:
    """A study summary shipped as package data, with ``available``; or why there is none.

    ``validation/*.py --ship`` writes these files; the pipeline and the validation map read
    them, so a run quotes a study without re-running it.
    """
    if not path.is_file():
        return {"available": False, "reason": f"no {what} shipped ({path.name})"}
    study: dict[str, Any] = json.loads(path.read_text())
    return {"available": True, **study}
