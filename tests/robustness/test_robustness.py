"""``selfmodel.robustness.stage``: the operating characteristics shipped as package data."""

from __future__ import annotations

import json
from pathlib import Path

from selfmodel.common.jsonable import rounded
from selfmodel.robustness.stage import (
    OPERATING_CHARACTERISTICS_JSON,
    OPERATING_CHARACTERISTICS_PACKAGE_DATA,
    operating_characteristics,
    summarise_operating_characteristics,
    write_operating_characteristics_package_data,
)


def test_package_data_is_the_summary_of_the_committed_study() -> None:
    """``make operating-characteristics-data`` has been run on the committed results (else: run it)."""
    assert OPERATING_CHARACTERISTICS_PACKAGE_DATA.is_file()
    shipped = operating_characteristics()
    # the pipeline-settings study (validation/pipeline_operating_characteristics.py --ship) rides along
    assert {k: v for k, v in shipped.items() if k != "pipeline"} == rounded(summarise_operating_characteristics(OPERATING_CHARACTERISTICS_JSON))
    assert shipped["file"] == "validation/results/operating_characteristics.json"
    assert operating_characteristics(pipeline=Path("/nonexistent.json"))["pipeline"] is None


def test_write_and_read_package_data(tmp_path: Path) -> None:
    raw = {"command": "x", "complete": False, "arms": [{"arm": "a", "coverage50": 0.1234567, "fits": [1]}]}
    src = tmp_path / "operating_characteristics_raw.json"
    src.write_text(json.dumps(raw))
    target = tmp_path / "data" / "operating_characteristics.json"
    write_operating_characteristics_package_data(src, target)
    shipped = operating_characteristics(target)
    assert shipped["arms"][0]["coverage50"] == 0.123457 and "fits" not in shipped["arms"][0]
    assert shipped["complete"] is False and len(shipped["sha256"]) == 64
    assert operating_characteristics(tmp_path / "absent.json") is None
