"""Numbers ready for JSON: rounded floats, NaN as null, NumPy scalars as Python ones."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def rounded(obj: Any, digits: int = 6) -> Any:
    """Round floats recursively (6 significant decimals) so JSON is stable and readable."""
    if isinstance(obj, float | np.floating):
        f = float(obj)
        return None if not np.isfinite(f) else round(f, digits)
    if isinstance(obj, Mapping):
        return {str(k): rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [rounded(v, digits) for v in obj]
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj
