"""The arms of the pipeline's operating-characteristics study, as its summary names them.

An arm is ``design:effect[:variant]`` (``validation/pipeline_operating_characteristics.py``).
The validation map, the report and the study's own terminal line read an arm here; nothing
here fits or samples (the report imports it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["EFFECT_MODEL", "arm_components"]

#: the model each effect of the pipeline study (arm ``design:effect[:variant]``) is decided by
EFFECT_MODEL = {"accuracy": "scale", "dprime": "sdt", "criterion": "sdt",
                "within": "within_between", "between": "within_between", "without_family": "scale",
                # the family's records carry the SDT member's settings (the scale member's are in
                # each record's ``model_samplers``)
                "confirmatory": "sdt"}


def arm_components(arm: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The components of one arm of the pipeline study's summary, other than ``overall``.

    A component is a slope the arm judges on its own: a task's slope, or a member of the
    confirmatory family. It is the arm's dict entries that carry a coverage
    (``hdi94_coverage``); other dicts of the arm (the family's ``member_truths``) are not.
    The report, the study's terminal line and the tests read an arm's components here.
    """
    return {k: v for k, v in arm.items()
            if k != "overall" and isinstance(v, dict) and "hdi94_coverage" in v}
