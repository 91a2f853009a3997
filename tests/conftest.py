"""Shared fixtures: one quick pipeline run on the default data, reused by report tests."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[1]
QUICK = ["--draws", "300", "--tune", "300", "--chains", "2"]


def _quick_run(out: Path) -> None:
    from selfmodel.cli import main

    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        assert main(["run", "--out", str(out), *QUICK, "--no-report"]) == 0
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="session")
def quick_build(tmp_path_factory) -> Path:
    """`selfmodel run` on data_raw/ with a short sampler run, without the report (results only).

    Tests read it and never write to it (``build_copy`` gives a private copy). Under
    pytest-xdist (``make test`` runs one worker per CPU) the workers share one build: the first to
    need it makes it under a file lock in the run's common temporary folder, and the others
    wait for it and read it, so it is made once per test run, as without xdist.
    """
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        out = tmp_path_factory.mktemp("quick_build")
        _quick_run(out)
        return out
    shared = tmp_path_factory.getbasetemp().parent
    out, done = shared / "quick_build", shared / "quick_build.done"
    with FileLock(str(shared / "quick_build.lock")):
        if not done.is_file():
            shutil.rmtree(out, ignore_errors=True)  # left by a worker whose run failed
            out.mkdir()
            _quick_run(out)
            done.touch()
    return out


@pytest.fixture
def build_copy(quick_build, tmp_path) -> Path:
    """A private copy of the quick build that a test may modify."""
    dst = tmp_path / "build"
    shutil.copytree(quick_build, dst)
    return dst


@pytest.fixture
def fake_nutpie(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """nutpie's compile and sample replaced by prior draws shaped as a posterior (tests/fakes.py).

    ``selfmodel.fit.fit`` then runs whole (cache, provenance, diagnostics) in the fast layer
    without compiling; the returned counters say how often it compiled and sampled.
    """
    from fakes import install_fake_nutpie

    return install_fake_nutpie(monkeypatch)
