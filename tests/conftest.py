"""Shared fixtures: one quick pipeline run on the default data, reused by report tests."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QUICK = ["--draws", "300", "--tune", "300", "--chains", "2"]


@pytest.fixture(scope="session")
def quick_build(tmp_path_factory) -> Path:
    """`selfmodel run` on data_raw/ with a short sampler run, without the report (results only)."""
    from selfmodel.cli import main

    out = tmp_path_factory.mktemp("quick_build")
    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        assert main(["run", "--out", str(out), *QUICK, "--no-report"]) == 0
    finally:
        os.chdir(cwd)
    return out


@pytest.fixture
def build_copy(quick_build, tmp_path) -> Path:
    """A private copy of the quick build that a test may modify."""
    dst = tmp_path / "build"
    shutil.copytree(quick_build, dst)
    return dst
