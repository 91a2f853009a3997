"""The test layers: a fast-layer test that compiles, samples or renders fails loudly.

The guard is installed by ``tests/conftest.py`` (README "Tests"). These tests call each
guarded entry point from the fast layer and expect the error before any work is done.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import conftest
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tiny_model():
    import pymc as pm

    with pm.Model() as model:
        pm.Normal("x", 0.0, 1.0)
    return model


@pytest.mark.parametrize("module, attr", conftest.GUARDED)
def test_every_guarded_entry_point_is_wrapped(module: str, attr: str) -> None:
    owner = importlib.import_module(module)
    for part in attr.split("."):
        owner = getattr(owner, part)
    assert getattr(owner, "__selfmodel_guard__", False), f"{module}.{attr} is not guarded"


def test_fit_reaches_the_guarded_compiled_model() -> None:
    """``selfmodel.fitting.sampling`` binds ``compiled_model`` at import: it must be the guarded one."""
    import selfmodel.fitting.sampling

    assert getattr(selfmodel.fitting.sampling.compiled_model, "__selfmodel_guard__", False)


def test_compiling_in_the_fast_layer_fails_with_the_test_and_the_fix() -> None:
    import nutpie
    import pymc as pm

    from selfmodel.fitting.compile_cache import compiled_model
    from selfmodel.fitting.sampling import SamplerSettings, fit
    from selfmodel.records.simulate import simulate_scale_cells

    here = "tests/repository/test_layers.py::test_compiling_in_the_fast_layer_fails_with_the_test_and_the_fix"
    model = _tiny_model()
    calls = [
        lambda: nutpie.compile_pymc_model(model),
        lambda: nutpie.sample(object()),
        lambda: compiled_model(model),
        lambda: pm.sample(model=model, draws=10, tune=10, chains=1),
    ]
    for call in calls:
        with pytest.raises(conftest.UnmarkedSlowTestError, match=re.escape(here)) as err:
            call()
        assert "@pytest.mark.ci" in str(err.value) and "tests/fakes.py" in str(err.value)
    # through the package's own entry point too
    data, _ = simulate_scale_cells(seed=1, n_families=2, sizes_per_family=2, n_tasks=1,
                                   n_per_cell=20)
    with pytest.raises(conftest.UnmarkedSlowTestError, match="compile"):
        fit("pooled", data, seed=1, settings=SamplerSettings(draws=10, tune=10, chains=1))


def test_a_report_kernel_in_the_fast_layer_fails() -> None:
    import nbformat
    from nbclient import NotebookClient

    client = NotebookClient(nbformat.v4.new_notebook())
    with pytest.raises(conftest.UnmarkedSlowTestError, match="setup_kernel"):
        with client.setup_kernel():
            pass


def test_the_quick_build_is_refused_in_the_fast_layer() -> None:
    with pytest.raises(conftest.UnmarkedSlowTestError, match="quick_build"):
        conftest.require_slow_layer("the quick_build fixture (a whole pipeline run)")


@pytest.mark.ci
def test_a_marked_test_may_compile() -> None:
    """The guard lets a test of a slower layer through (nothing is compiled here)."""
    conftest.require_slow_layer("a compile")


def test_make_test_runs_exactly_the_unmarked_tests() -> None:
    """``make test`` deselects every layer the guard lets through, and nothing else."""
    makefile = (ROOT / "Makefile").read_text()
    fast = re.search(r"^FAST_TESTS\s*:=\s*(.+)$", makefile, re.M)
    assert fast is not None
    assert fast.group(1).strip() == f"not ({' or '.join(conftest.SLOW_LAYERS)})"
    assert re.search(r'^test: .*\n\t.*-m "\$\(FAST_TESTS\)"', makefile, re.M)
