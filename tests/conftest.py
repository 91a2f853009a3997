"""Shared fixtures, and the guard that keeps the fast layer fast.

Test layers (markers declared in pyproject.toml; README "Tests"):

- no layer marker: the fast layer, ``make test``. It compiles no model and renders no report.
- ``ci``: compiles or samples a model (a real fit, a recovery check, a Monte Carlo check of
  a prior) or starts Spark; CI runs it after the fast layer (``make test-ci``).
- ``e2e``: runs the whole pipeline, renders a report or installs the wheel; CI runs it
  (``make test-ci``) unless it is also ``slow``.
- ``slow``: long statistical tests (parameter recovery, operating characteristics); ``make test-slow``,
  not CI unless also ``ci``.

The guard: while a test without ``slow``, ``ci`` or ``e2e`` runs (its fixtures' set-up and
tear-down included), the entry points that compile or sample a model or execute a report's
kernel raise :class:`UnmarkedSlowTestError`, so a test that would make the fast layer slow fails
at once and says how to fix it. Each pytest-xdist worker loads this file and installs the
guard in its own process. It guards this process only: a test that starts ``selfmodel run``
in a subprocess is not stopped by it (none of the fast layer does; the CPU seconds of
``make test`` in bench/README.md would show one).
"""

from __future__ import annotations

import functools
import importlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[1]
QUICK = ["--draws", "300", "--tune", "300", "--chains", "2"]

# Fits of an in-process `selfmodel run` stay in this process (analysis/fitting/fitpool.py: no worker
# processes), where the guard below sees them and pytest-xdist already uses the cores; the
# quick build passes --jobs 2, so the worker path runs in the e2e layer too.
os.environ["SELFMODEL_JOBS"] = "1"

#: A test carrying one of these may compile, sample and render (the slower layers).
SLOW_LAYERS = ("slow", "ci", "e2e")

#: (module, attribute) of every entry point that compiles or samples a model or runs a
#: report's notebook kernel. ``selfmodel.fitting.sampling`` reaches nutpie and PyMC through these
#: module attributes (``import nutpie; nutpie.compile_pymc_model(...)``).
GUARDED = (
    ("nutpie", "compile_pymc_model"),
    ("nutpie", "sample"),
    ("pymc", "sample"),
    ("pymc.sampling.mcmc", "sample"),
    ("selfmodel.fitting.compile_cache", "compiled_model"),
    ("selfmodel.fitting.fitpool", "run_in_worker"),  # a fit in a worker process, out of the guard's sight
    ("nbclient.client", "NotebookClient.setup_kernel"),
)


class UnmarkedSlowTestError(RuntimeError):
    """A test of the fast layer reached a model compile, a sampler or a report kernel."""


_current: dict[str, pytest.Item | None] = {"item": None}


def _in_slow_layer(item: pytest.Item | None) -> bool:
    return item is None or any(item.get_closest_marker(m) for m in SLOW_LAYERS)


def require_slow_layer(what: str) -> None:
    """Raise :class:`UnmarkedSlowTestError` if the running test is in the fast layer."""
    item = _current["item"]
    if not _in_slow_layer(item):
        assert item is not None
        raise UnmarkedSlowTestError(
            f"{item.nodeid} called {what}, which compiles or samples a model or runs a "
            "report's kernel: the fast layer (`make test`) must not. Use a fake fit "
            "(tests/fakes.py), or mark the test @pytest.mark.ci (a fit CI runs), "
            "@pytest.mark.e2e (pipeline or report) or @pytest.mark.slow (long statistics)."
        )


def _guarded(what: str, func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def guard(*args: Any, **kwargs: Any) -> Any:
        require_slow_layer(what)
        return func(*args, **kwargs)

    guard.__selfmodel_guard__ = True  # type: ignore[attr-defined]
    return guard


def _install_guard() -> None:
    for module_name, attr in GUARDED:
        owner: Any = importlib.import_module(module_name)
        *path, name = attr.split(".")
        for part in path:
            owner = getattr(owner, part)
        func = getattr(owner, name)
        if not getattr(func, "__selfmodel_guard__", False):
            setattr(owner, name, _guarded(f"{module_name}.{attr}", func))


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        return  # the pytest-xdist controller runs no test; each worker installs the guard
    _install_guard()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    _current["item"] = item
    try:
        return (yield)
    finally:
        _current["item"] = None


def _quick_run(out: Path) -> None:
    from selfmodel.cli import main

    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        assert main(["run", "--out", str(out), *QUICK, "--no-report", "--jobs", "2"]) == 0
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="session")
def quick_build(tmp_path_factory) -> Path:
    """`selfmodel run` on data_raw/ with a short sampler run, without the report (results only).

    Tests read it and never write to it (``build_copy`` gives a private copy). Under
    pytest-xdist (``make test`` runs one worker per CPU) the workers share one build: the first to
    need it makes it under a file lock in the run's common temporary folder, and the others
    wait for it and read it, so it is made once per test run, as without xdist. Only tests of
    the slower layers may use it.
    """
    require_slow_layer("the quick_build fixture (a whole pipeline run)")
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

    ``selfmodel.fitting.sampling.fit`` then runs whole (cache, provenance, diagnostics) in the fast layer
    without compiling; the returned counters say how often it compiled and sampled.
    """
    from fakes import install_fake_nutpie

    return install_fake_nutpie(monkeypatch)
