"""Regression: the default run gives today's results.json, byte for byte.

``tests/fixtures/regression/results_default.json`` is ``results.json`` of
``selfmodel run data_raw --no-report`` (default seed and sampler settings), run from the
repository root. It was first made by the code before the pipeline was restructured (issue
12; the restructured code reproduced it byte for byte) on the Python 3.11 / PyMC 5 / ArviZ 0.23
stack, and remade on the Python 3.12 / PyMC 6 / ArviZ 1 stack of ``requirements.lock`` when the
stack changed: a different sampler build and numerical library give different draws for the
same seed, so no byte comparison survives a stack change. How far the two stacks' results are
apart (slopes against their Monte Carlo error, decisions, diagnostics) is in
``docs/stack_migration.md`` (``bench/compare_stack.py``). A run of the current code on the
fixture's stack must write the same bytes, apart from the deliberate changes listed in
:data:`DELIBERATE` (each with its reason); a run on another stack fails first with a message
naming the versions that differ.

To remake the fixture after a deliberate change of stack (never to make a failing refactor
pass)::

    .venv/bin/selfmodel run data_raw --out build --no-report
    cp build/results.json tests/fixtures/regression/results_default.json

It was remade again, deliberately, by issue 15 (verdicts a reviewer accepts): the decision
vocabulary separates direction from size (``credibly_positive``/``credibly_negative``, every
decision has ``meaning``), ROPEs in each scale variable's own units (``rope_meaning``), task
slopes with their own priors in the scale and SDT models, SDT standard deviations
``HalfNormal(1)``, and the new sections ``confounds`` and ``verdict``.

It was remade once more for issue 19 (did training help?), whose changes were: the default data gain
one trained checkpoint per open family (appended; the verdict fit's cells stay byte-identical,
same ``fit.data_sha256``), so ``data`` (16800 records, 21 models), ``models``,
``by_model_task``, ``tasks``, ``skill`` and ``calibration`` have their rows;
``frequentist.models_without_scale_variable`` and ``scale_effect.excluded_derived_checkpoints``
list them (derived checkpoints are off the scale axis), as do the scale-variable sensitivity
variants' ``models_without_variable``; new section ``training_effect``; the first-screen
``verdict`` sentences follow.

The fixture in the repository was remade once all of these (and issue 16's reviewer checks:
``self_vs_other_rescored``, ``missingness``, ``mixed_predictive``, ``sdt_crosscheck``,
``sensitivity.effects``, Bayes-factor ranges and multiplicity in ``hypotheses``) were merged,
on the Python 3.12 stack of ``requirements.lock``.

It was remade for issue 18 (a cold report in a minute): the prior x0.5 / x2 variants of
``sensitivity.priors`` and ``sensitivity.effects`` are now the main fit's draws reweighted by
the prior ratio (PSIS, ``analysis/fitting/reweight.py``) where the Pareto k allows -- every one on
the default data except ``within_between``'s, refitted as before -- so their means and HDIs
moved at Monte Carlo level (every decision and ``holds`` is unchanged), each variant has
``reweighting``, and a reweighted variant's ``cache_key`` is null (no fit of its own) and its
``diagnostics_passed`` is the main fit's. The same remake took ``model_zoo.sdt`` and
``within_between`` (and what derives from them) from a run with an empty compile cache:
their draws differed from the previous fixture's at the same cache key (the code before
this change gave the same new draws from an empty cache, so it is not this change; whether
the compiled code's provenance or the sampler is the cause was not established), while the
verdict model's draws were identical.

It was remade after the merges of issues 13, 16, 18 and 19 of the next round: the package
is imported as ``selfmodel`` (no value changes by that); issue 16's d' power and
posterior-drawn variance components (``design_sensitivity``), the SDT scale-variable refits
(``sensitivity.effects``) and the strict-accuracy refit (``missingness``); issue 18's
decorrelated slope basis as the default of the scale and SDT models (``models/scale.py``,
"Slope basis": the same prior and posterior, other draws, so every slope moved at Monte
Carlo level; the SDT fit's R-hat check now passes and it fails on one divergence instead),
and their prior x0.5 / x2 variants refitted rather than reweighted (their task-slope priors
are deterministics there); issue 19's SDT and other-model contrasts in ``training_effect``.
Every decision and ``holds`` of the previous fixture is unchanged. This fixture is the
``results.json`` of a cold run (empty compile cache, ``bench/bench_pipeline.py --steps first``),
and the command above with its fits folder seeded wrote the same bytes.

Shipping arms ``default:accuracy`` and ``seb:accuracy`` of the pipeline-settings calibration
(``validation/pipeline_operating_characteristics.py --ship``) changed only ``operating_characteristics.pipeline``;
the fixture was remade for that alone. Shipping arms ``default:dprime`` and
``default:criterion`` (and the first two data sets of the SEB SDT arms) again changed only
``operating_characteristics.pipeline``, and the fixture was remade for that alone. So did adding the
study's ``targets`` to its summary, and running the SEB SDT arms further.

Completing the study (the SEB SDT arms to 200, and ``targets.false_improves_pm_at_bound``)
changed ``operating_characteristics.pipeline`` again, and this time the fixture was edited at that key
alone (copied from a run of the new code): the session that did it had a fresh clone on another
machine (an AVX-512 Xeon), whose cold run gave the same cache keys but other draws for the same
seed -- every slope moved at Monte Carlo level, and the SDT fit passed its diagnostics where the
fixture's fails on one divergence. So the byte comparison holds on the machine the fits were
made on, or with ``SELFMODEL_REGRESSION_FITS`` pointing at fits made there; across machines,
compare two runs with ``bench/compare_stack.py`` (slopes against their Monte Carlo error). Nothing else in ``results.json``
reads the calibration summary (checked on that run: no other value names it).

The run samples every fit of a default run (several minutes), so the test is
``slow``. Set ``SELFMODEL_REGRESSION_FITS`` to the fits folder of an earlier default run
(e.g. ``build/fits``; its folder, with selfmodel's manifest, is copied and the rerun record
left out) to seed the fit cache: fits are reused only when their cache key
(model, options, priors, sampler settings, seed, data hash, package versions) matches, so
seeding cannot hide a change in what is fitted.

It was amended by hand for issue 29 (status words, records mappings): the keys ``status``
(``[]``: no status line applies to the default run, whose diagnostics pass and which keeps
every record), ``data.correct_only_records`` (0), ``data.repeat_columns`` (``{}``),
``data.hints`` (``[]``), ``data.study_mapping`` and ``settings.study_mapping`` /
``settings.preset`` (``null``: no ``--mapping``, no ``--preset``) were added with the values
the code gives for the default data (the data keys computed by ``ingest`` on ``data_raw``);
no number changed.

It was remade from a cold run (``bench/bench_pipeline.py --steps naive first second
other_data --name pipeline_issue32``, step ``first``, commit 26d92e0) after the merges of
issues 28 (.2/.3/.5/.7), 29, 30 and 32 of the next round: one sign rule at the printed HDI's
level (``prob_threshold`` gone; the SDT refusal d' [-0.003, +0.423] is now
``no_credible_effect``, every other decision of ``scale_effect`` and ``sdt_effect`` as
before), ``role`` (confirmatory / exploratory) on every decision and
``hypotheses.multiplicity.confirmatory``, ``fit.declaration``, d' of constant responders
(none in the default data), the scale and SDT prior variants reweighted by PSIS (they were
refitted: ``reweighting`` with Pareto k; their ``diagnostics_passed`` is the main fit's),
and the status keys of issue 29. The main scale fit's slopes equal those of a cold run of
the code before (bdaa7df) on this machine (``bench/compare_stack.py``: z = 0.00), and so do
the SDT slopes to the printed digits; the strict-accuracy
and SDT scale-variable refits' draws differ at the same cache keys (the empty-compile-cache
effect described above), every decision of theirs unchanged.

It was remade from a cold run (``selfmodel run data_raw --out OUT --no-report``, 238 s wall
beside a test run) after the merges of the next round's issues 31 (the package regrouped by
concept: no value changes by that; the cell reduction defined once: the verdict fit's
``data_sha256`` unchanged) and 28.1: ``training_effect.privileged_access`` is now a difference
in differences on cross-predictions, which the default data do not have, so every checkpoint
is ``not_estimable`` with the reason and ``others`` is gone. Two decisions at a boundary moved
with Monte Carlo-level changes of the SDT and family-left-out refits' draws (the empty-cache
effect above): the SDT refusal d' per task, [-0.003, +0.423] -> [+0.001, +0.423], is now
``credibly_positive`` (was ``no_credible_effect``), and the slope without the cirrus family,
[0.105, 0.428] -> [0.099, 0.431], is now ``credibly_positive`` (was ``improves``: the lower
bound crossed the ROPE). The scale slope is 0.198 [0.075, 0.323] (was 0.198 [0.070, 0.324]).

It was remade from a cold run (``selfmodel run data_raw --out build --no-report`` at
42f409b, 627 s wall beside other work) for issue 28.4 and the merges of issue 29: the SDT
model samples with its own ``SPEC.sampling`` (4 x 3000 draws after 1500 tuning,
target_accept 0.995; ``settings.sampler_by_model``), so its fit now passes its gate (was
max R-hat 1.013: failed) and its slopes moved at Monte Carlo level: d' refusal 0.206
[0.001, 0.423] -> 0.208 [-0.004, 0.419] is now ``no_credible_effect`` (was
``credibly_positive``; the same boundary as the remake before last), and with it the
confirmatory ``dprime_overall`` (97% HDI) and the prior-x0.5 variant's d' decision; every
other decision is unchanged, and the scale slope is identical. ``contrasts`` and
``confidence_calibration_contrasts`` are new keys, null in the default run (the scale model is
fitted and the records have no conditions). ``bench/default_gates.py`` ran the same
command over five seeds (20261130, 1, 2, 3, 4): every gate passed in each.

It was remade for issue 28.6 (every decision's calibration at the pipeline's settings) from
a run of the same command with every fit reused from a cold run of this code (which gave the
old fixture's bytes but for the new key): ``validation_map`` is a new key (which kinds of
decision have a null, a coverage and a misspecified calibration arm), and
``operating_characteristics.pipeline`` holds the re-shipped study with its new arms (the
independent generator's ``default:<effect>:clustered`` and ``default:<effect>:slope<b>``)
and per arm ``truth``, ``generator``, ``versions`` and ``model_sampler``. Nothing else
changed: every decision, estimate and diagnostic is byte-identical.

It was remade again for issue 28.6, the same way (every fit reused; the fixture before it
differed only in these keys): ``training_effect.calibration`` and
``self_vs_other_rescored.calibration`` are new keys (the shipped studies of
``validation/training_study.py`` and ``validation/self_vs_other_study.py``), the
``validation_map`` rows of both kinds read them, and ``operating_characteristics.pipeline`` holds
the re-shipped study with each arm's ``command`` and the SDT arms' further data sets.
Every decision, estimate and diagnostic is byte-identical.

Shipping the SDT ``clustered`` arms at 77 data sets (from 18) changed
``operating_characteristics.pipeline`` and the two ``validation_map`` rows that read it (the d' and
criterion misspecified arms' ``n`` and interval); the fixture was edited at those keys alone,
copied from a cold run of the new code on another machine, whose other values moved at Monte
Carlo level (as above; eight of its decisions on a boundary differed, among them
``confounds.without_family`` and the Bonferroni-adjusted d' member of the confirmatory family).

Shipping the ``mundlak`` arms (the within- and between-family slopes and the family-left-out
refit) changed ``operating_characteristics.pipeline`` and the ``confounds`` and ``within_between`` rows
of ``validation_map`` alone (a run of the new code with the previous run's fits reused: no
other value differed); the fixture was edited at those keys.

It was remade from a cold run on this machine (``bench/bench_pipeline.py --steps naive first
second other_data --name pipeline_issue32``, step ``first``, commit c74909c) for issue 32 and
28.6: ``within_between``'s prior variants are reweighted in its plain form instead of refitted
(``sensitivity.effects.within_between.variants[].reweighting``: ``psis``, Pareto k -0.06 and
0.59), and the SDT ``slope0.4`` arms were shipped at 100 data sets
(``operating_characteristics.pipeline``, ``validation_map``). Against the previous fixture (a cold run
on another machine) every value moved at Monte Carlo level, and seven decisions on a boundary
differ -- the cross-machine ones noted above, none from this change: ``confounds.without_family``
(``credibly_positive`` -> ``improves``), the Bonferroni-adjusted d' member of the confirmatory
family (``no_credible_effect`` -> ``credibly_positive``), the within-family word-association
slope (in ``model_zoo`` and in its copy in ``sensitivity.effects``), and three SDT
sensitivity-variant decisions. A run of the new code with the previous run's fits of this
machine reused differed from the run before the change in the two reweighted variants alone
(one of their decisions moved on the boundary: x0.5, within-family word association, HDI
[-0.001, 0.371] refitted, [0.014, 0.372] reweighted). The first screen's robustness sentence
then said "prior variants" where it said "prior refits" (the variants are reweighted where the
Pareto k allows): the fixture was edited at that sentence, and a run of the new code with the
fixture run's fits reused wrote the fixture's bytes. Shipping the SDT ``slope0.15`` arms at 25
data sets then changed ``operating_characteristics.pipeline`` and the d' and criterion rows of
``validation_map`` alone (a run with the same fits reused: no other value differed); the
fixture was edited at those keys. The same held when those arms reached 100 data sets: a run
with the fixture run's fits reused differed from the fixture at those keys alone, and wrote
the fixture; and again when the SDT ``clustered`` arms went from 77 to 147 data sets. Adding
the confirmatory family's arms (``default:confirmatory``, ``default:confirmatory:clustered``)
and rerunning the default design's d' and criterion nulls at the SDT model's own settings (their
first records moved to ``validation/results/pipeline_operating_characteristics_other_settings/``) changed
``operating_characteristics.pipeline`` and the d', criterion and confirmatory rows of
``validation_map`` alone (a run with the fixture run's fits reused), which wrote the fixture;
so did each later ship of those arms and of the SDT ``clustered`` arms. Shipping the contrast
study run to its targets (``validation/contrast_study.py``: 200 null, 200 misspecified, 100
recovery data sets) changed the ``contrasts`` row of ``validation_map`` alone (the same way);
shipping the family and the default d' and criterion nulls at 164 data sets changed the keys named
above for them alone, and so did adding the family's coverage arm
(``default:confirmatory:dprime0.4``) and shipping those nulls at 200 data sets (the d' and
criterion rows turned ``checked``), and shipping that coverage arm at 44, at 68 and at 100 data
sets (its target), and shipping the family's clustered arm (``default:confirmatory:clustered``)
at 161 and at 200 data sets (its target).

It was edited for issue 53 (statuses, one ECE per name, the decision field; ``schema_version``
2.0) at the keys that change alone, copied from a cold run of the new code on this machine
(``selfmodel run data_raw --out OUT --no-report --jobs 1``, about 25 minutes beside other
work): ``schema_version`` ``"2.0"``; ``data`` gains ``statuses`` (ok 16,471, unparsed 329),
``records_excluded`` (0), ``excluded_reasons``, ``carried`` and ``carried_not_trusted``
(empty: the default data are no ingested records.parquet); every row of ``by_model_task``,
``tasks`` and ``skill`` gains ``n_not_asked`` and ``n_unanswered`` (0), ``skill`` rows and
``calibration.cells``/``calibration.models`` gain ``ece_prediction_confidence`` (equal to
their ``ece``, checked on every row), and ``calibration`` gains ``measure``. Every fit of the
default run passes its gate, so no decision became ``not_decided``. Those sections, and
``models``, ``status``, ``settings`` and ``validation_map``, equal the run's; every other
value of the run differed from the fixture only by its fits' draws (same cache keys and data
hash: the cross-machine effect described above), among them three decisions on a boundary
in ``sensitivity.effects`` (the d' refusal slope of the prior-x2 variant, the within-family
word-association slope of the prior-x2 variant, and the d' word-association slope with active
parameters: ``no_credible_effect`` in the fixture, ``credibly_positive`` in the run) and the
scale slope, 0.197 [0.067, 0.322] against the fixture's 0.197 [0.074, 0.324].

It was rewritten for issue 51 (names that explain themselves) by
``tests/fixtures/regression/rename_2_0.py``, once, without a run: the three meanings of
"calibration" got their own names (``confidence_calibration``, ``operating_characteristics``,
``validation_map``; the list is the script's and ``docs/results.md``'s), and the values that
name a renamed validation script or results folder name it by its new name. No number and
no other string changed: undoing the renames gives the bytes of the fixture before them
(:data:`BEFORE_RENAMES_SHA256`), and ``validation_map``, ``operating_characteristics`` and
the shipped studies' sections equal what the renamed code computes from the package data.

It was edited for issue 54 (constant responders in the rescoring), without a run:
``self_vs_other_rescored`` (no fit; the records and the seed alone) was recomputed by the new
code on ``data_raw`` with the fixture's seed. Its only differences from the fixture were the
new keys (every model row's ``responder``, ``prediction_true_share`` and ``responder_note``;
every summary's ``n_models_counted`` and ``models_not_counted``): the default data have no
(near-)constant responder, so every count is the one before. Those keys were added alone
(:func:`_without_later_additions` removes them again for the renames' check). The same
issue added one sentence to the ``prose`` of the scale and SDT declarations (``fit``,
``model_zoo.scale.fit``, ``model_zoo.sdt.fit``): ``selfmodel.models.graph.ZERO_SUM_TEXT``,
the marginal sd of a zero-sum effect; the fixture's prose was checked to be the new
declaration's without it, and the sentence was appended alone. And it added
``training_effect.privileged_access.decision_basis`` (a constant: what the section's decision
words rest on, a bootstrap), alone.

It was edited again for issue 54 (status from targets) at two keys, without a run, because both are
pure functions of the other keys and the shipped studies (``build_results`` computes them last):
``validation_map`` (every arm gains ``targets``, ``meets_target``, ``settings`` and the counts of
its records at other settings or not recording them; every kind ``reasons``, ``missed_arms``,
``status_words`` and those counts; the status of accuracy, d', criterion, contrasts, confounds,
within/between and self vs other turned from ``checked`` to ``missed``) and ``verdict`` (one
finding added, ``validation``, saying so; every other finding is unchanged). Undone, the
fixture without those two keys is the one before the renames without them
(:data:`BEFORE_RENAMES_OTHER_KEYS_SHA256`), and both keys equal what the code computes from the
fixture (``test_fixture_map_and_first_screen_are_computed_from_the_fixture``).
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "regression" / "results_default.json"

RENAMES = ROOT / "tests" / "fixtures" / "regression" / "rename_2_0.py"
#: SHA-256 of the fixture before issue 51's renames (commit 535a2bc), as written.
BEFORE_RENAMES_SHA256 = "1244b4b5a316e3bc745e5fa1d10e552ffbb8dfb7df84308155c7de3472ea9bf8"
#: SHA-256 of that fixture without ``calibration_map`` (now ``validation_map``) and ``verdict``,
#: the keys issue 54 recomputed.
BEFORE_RENAMES_OTHER_KEYS_SHA256 = "6e7765ba1e5483a4b4ed7b86fd4da0fb615560a45cae85d9f1abe5a2099d7e29"
#: the keys issue 54 recomputed from the fixture's other keys and the shipped studies
RECOMPUTED = ("validation_map", "verdict")

#: Deliberate changes against the fixture: JSON path -> (function of the old value giving the
#: new value, reason). Everything else must be byte-identical. Emptied when the fixture was
#: remade on the 3.12 stack (that run already wrote the restructured layout's paths).
DELIBERATE: dict[tuple[str, ...], tuple[Callable[[Any], Any], str]] = {
    # none since the last remake (issue 31.5's installed name of hypotheses.toml is in the fixture)
}


def _apply(results: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(results)
    for path, (change, _reason) in DELIBERATE.items():
        node = out
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = change(node.get(path[-1]))
    return out


def _canonical(obj: Any) -> str:
    """The bytes ``selfmodel.common.atomic.write_json`` writes."""
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


def _renames() -> Any:
    spec = importlib.util.spec_from_file_location("rename_2_0", RENAMES)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _without_later_additions(fixture: dict[str, Any]) -> dict[str, Any]:
    """The fixture without what was added after the renames (each named, values untouched):
    the constant-responder flags of ``self_vs_other_rescored`` and the zero-sum sentence of the
    scale and SDT declarations, the privileged-access section's ``decision_basis`` (issue 54)."""
    from selfmodel.models.graph import ZERO_SUM_TEXT

    out = json.loads(json.dumps(fixture))
    for decl in (out["fit"]["declaration"], out["model_zoo"]["scale"]["fit"]["declaration"],
                 out["model_zoo"]["sdt"]["fit"]["declaration"]):
        decl["prose"] = decl["prose"].removesuffix(" " + ZERO_SUM_TEXT)
    out["training_effect"]["privileged_access"].pop("decision_basis")
    for task in out["self_vs_other_rescored"]["per_task"].values():
        for row in task.get("models", []):
            for k in ("responder", "prediction_true_share", "responder_note"):
                row.pop(k)
        for summary in (task.get("summary") or {}).values():
            for k in ("n_models_counted", "models_not_counted"):
                summary.pop(k)
    return out


def test_fixture_is_the_one_before_the_renames_with_the_new_names() -> None:
    """Issue 51 renamed keys and file names only: undone, the fixture is the one before, byte
    for byte but for the two keys issue 54 recomputed, and the renames map it to the fixture
    again (no old key is left)."""
    rn = _renames()
    fixture = json.loads(FIXTURE.read_text())
    before = rn.undo(_without_later_additions(fixture))
    others = {k: v for k, v in before.items() if k not in ("calibration_map", "verdict")}
    assert hashlib.sha256(rn.canonical(others).encode()).hexdigest() == BEFORE_RENAMES_OTHER_KEYS_SHA256
    assert rn.rename(before) == _without_later_additions(fixture)
    holders = 0
    for where, old, new in rn.KEYS:  # ``contrasts`` is null in the default run
        for holder in rn._holders(fixture, where):
            assert old not in holder and new in holder, (where, old, new)
            holders += 1
    assert holders == len(rn.KEYS) - 1


def test_fixture_map_and_first_screen_are_computed_from_the_fixture() -> None:
    """The keys issue 54 edited without a run are what ``build_results`` computes from the others."""
    from selfmodel.decisions.status import status_lines
    from selfmodel.decisions.validation_map import validation_map
    from selfmodel.decisions.verdict import findings
    from selfmodel.pipeline.results import rounded, shipped_studies

    fixture = json.loads(FIXTURE.read_text())
    others = {k: v for k, v in fixture.items() if k not in RECOMPUTED}
    others["validation_map"] = rounded(validation_map(others, shipped_studies()))
    assert others["validation_map"] == fixture["validation_map"]
    assert {"findings": findings(others)} == fixture["verdict"]
    assert status_lines(others) == fixture["status"]


def test_results_doc_lists_every_renamed_key() -> None:
    """docs/results.md, version 2.0, names each key issue 51 renamed, old -> new."""
    doc = (ROOT / "docs" / "results.md").read_text().split("## Versions", 1)[1].split("\n## ", 1)[0]
    for where, old, new in _renames().KEYS:
        shown = ".".join((*where, "")).replace("*.", "[]")
        assert f"`{shown}{old}` -> `{shown}{new}`" in doc, (where, old, new)


def _stack_differences(versions: dict[str, str], pins: dict[str, str]) -> list[str]:
    return [f"{k}: fixture {versions.get(k)}, here {v}" for k, v in sorted(pins.items())
            if versions.get(k) != v]


def _locked() -> dict[str, str]:
    """The pinned versions in requirements.lock of the packages that determine a fit."""
    from selfmodel.fitting.sampling import _VERSIONED

    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        name, sep, version = line.partition("==")
        if sep and name.strip().lower().replace("_", "-") in _VERSIONED:
            pins[name.strip().lower().replace("_", "-")] = version.strip()
    return pins


def test_fixture_is_from_the_locked_stack() -> None:
    """The fixture was made with the versions requirements.lock pins (remake it with the lock)."""
    fixture = json.loads(FIXTURE.read_text())
    pins = _locked()
    assert {"pymc", "pytensor", "arviz", "nutpie", "numpy"} <= set(pins)
    diff = _stack_differences(fixture["fit"]["versions"], pins)
    assert not diff, "regression fixture made on another stack: " + "; ".join(diff)


@pytest.mark.slow
@pytest.mark.e2e
def test_default_run_is_byte_identical_to_the_fixture(tmp_path: Path, monkeypatch) -> None:
    from selfmodel.cli import main
    from selfmodel.fitting.sampling import package_versions

    here = package_versions()
    fixture_versions = json.loads(FIXTURE.read_text())["fit"]["versions"]
    diff = _stack_differences(fixture_versions, {k: here[k] for k in ("python", *_locked())})
    assert not diff, ("the fixture is from another stack, so bytes cannot match (compare "
                      "across stacks with bench/compare_stack.py): " + "; ".join(diff))
    out = tmp_path / "build"
    seed_fits = os.environ.get("SELFMODEL_REGRESSION_FITS")
    if seed_fits:
        # the earlier run's whole --out (its manifest makes it selfmodel's: a bare fits folder
        # is refused as a user's), without its rerun record, so everything is computed again
        # and only the fits can be reused
        shutil.copytree(Path(seed_fits).parent, out)
        (out / "run-key.json").unlink(missing_ok=True)
    monkeypatch.chdir(ROOT)  # results.json shows input paths relative to the working directory
    assert main(["run", "data_raw", "--out", str(out), "--no-report"]) == 0
    new_text = (out / "results.json").read_text()
    expected = _apply(json.loads(FIXTURE.read_text()))
    diff = _differences(expected, json.loads(new_text))
    assert not diff, "\n".join(diff[:20])
    assert new_text == _canonical(expected)
