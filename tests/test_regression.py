"""Regression: the default run gives today's results.json, byte for byte.

``tests/fixtures/regression/results_default.json`` is ``results.json`` of
``selfmodel run data_raw`` (default seed and sampler settings). It was first made by the code
before the pipeline was restructured (issue 12) and remade once, deliberately, by issue 15
(verdicts a reviewer accepts), whose changes were:

- the decision vocabulary separates direction from size: ``credibly_positive`` and
  ``credibly_negative`` added, ``no_credible_effect`` narrowed to "the sign is not credible";
  every decision record has ``meaning``; hypothesis rows have ``direction_supported``; the
  rule's description names the new values; power curves have ``p_credibly_positive``;
- ROPEs in each scale variable's own units: ``rope`` and ``rope_meaning`` in the decided
  sections; the scale-variable sensitivity compares directions (``compared_on``);
- task slopes with their own priors in the scale and SDT models (``task_slopes="independent"``,
  ``beta`` = average over tasks), SDT standard deviations ``HalfNormal(1)``: every fit of those
  two models, their checks, decisions, curves, hypotheses, sensitivity refits and the power
  simulation (whose approximate fit follows the new prior) changed;
- new sections ``confounds`` (including a leave-one-family-out refit) and ``verdict``
  (the first screen's sentences).

A run of the current code must write the same bytes, apart from the deliberate changes listed
in :data:`DELIBERATE` (each with its reason; none since the fixture was remade).

The run samples eight fits at the default settings (several minutes), so the test is
``slow``. Set ``SELFMODEL_REGRESSION_FITS`` to a fits folder of an earlier default run
(e.g. ``build/fits``) to seed the fit cache: fits are reused only when their cache key
(model, options, priors, sampler settings, seed, data hash, package versions) matches, so
seeding cannot hide a change in what is fitted.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "regression" / "results_default.json"

#: Deliberate changes against the fixture: JSON path -> (function of the old value giving the
#: new value, reason). Everything else must be byte-identical.
DELIBERATE: dict[tuple[str, ...], tuple[Callable[[Any], Any], str]] = {}


def _apply(results: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(results)
    for path, (change, _reason) in DELIBERATE.items():
        node = out
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = change(node.get(path[-1]))
    return out


def _canonical(obj: Any) -> str:
    """The bytes ``analysis.atomic.write_json`` writes."""
    return json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n"


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Every leaf where ``a`` (expected) and ``b`` (new) differ, as readable lines."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only in {'new' if k in b else 'expected'}")
            else:
                out += _differences(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in _differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: expected {str(a)[:200]}, got {str(b)[:200]}"]


def test_fixture_is_a_default_run() -> None:
    """The fixture is what it claims: the default seed and data, every section present."""
    fixture = json.loads(FIXTURE.read_text())
    assert fixture["settings"]["seed"] == 20261130
    assert fixture["settings"]["inputs"][0].startswith("data_raw/")
    assert FIXTURE.read_text() == _canonical(fixture)
    for key in ("scale_effect", "model_zoo", "sdt_effect", "hypotheses", "sensitivity",
                "design_sensitivity"):
        assert fixture[key] is not None, key


@pytest.mark.slow
@pytest.mark.e2e
def test_default_run_is_byte_identical_to_the_fixture(tmp_path: Path, monkeypatch) -> None:
    from analysis.cli import main

    out = tmp_path / "build"
    seed_fits = os.environ.get("SELFMODEL_REGRESSION_FITS")
    if seed_fits:
        shutil.copytree(seed_fits, out / "fits")
    monkeypatch.chdir(ROOT)  # results.json shows input paths relative to the working directory
    assert main(["run", "data_raw", "--out", str(out), "--no-report"]) == 0
    new_text = (out / "results.json").read_text()
    expected = _apply(json.loads(FIXTURE.read_text()))
    diff = _differences(expected, json.loads(new_text))
    assert not diff, "\n".join(diff[:20])
    assert new_text == _canonical(expected)
