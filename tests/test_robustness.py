"""``selfmodel.robustness.stage``: the calibration study shipped as package data."""

from __future__ import annotations

import json
from pathlib import Path

from selfmodel.common.jsonable import rounded
from selfmodel.robustness.stage import (
    CALIBRATION_JSON,
    CALIBRATION_PACKAGE_DATA,
    calibration_study,
    summarise_calibration,
    write_calibration_package_data,
)


def test_package_data_is_the_summary_of_the_committed_study() -> None:
    """``make calibration-data`` has been run on the committed results (else: run it)."""
    assert CALIBRATION_PACKAGE_DATA.is_file()
    shipped = calibration_study()
    # the pipeline-settings study (validation/pipeline_calibration.py --ship) rides along
    assert {k: v for k, v in shipped.items() if k != "pipeline"} == rounded(summarise_calibration(CALIBRATION_JSON))
    assert shipped["file"] == "validation/results/calibration.json"
    assert calibration_study(pipeline=Path("/nonexistent.json"))["pipeline"] is None


def test_write_and_read_package_data(tmp_path: Path) -> None:
    raw = {"command": "x", "complete": False, "arms": [{"arm": "a", "coverage50": 0.1234567, "fits": [1]}]}
    src = tmp_path / "calibration.json"
    src.write_text(json.dumps(raw))
    target = tmp_path / "data" / "calibration_study.json"
    write_calibration_package_data(src, target)
    shipped = calibration_study(target)
    assert shipped["arms"][0]["coverage50"] == 0.123457 and "fits" not in shipped["arms"][0]
    assert shipped["complete"] is False and len(shipped["sha256"]) == 64
    assert calibration_study(tmp_path / "absent.json") is None
