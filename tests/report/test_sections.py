"""The report's code (``analysis/report/sections/``): every block from saved results, and short report cells.

Fast: the blocks read a saved ``results.json`` (the regression fixture) and draw with the Agg
backend; nothing is fitted or rendered.
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from selfmodel.common.paths import REPORT_QMD
from selfmodel.report import sections
from selfmodel.report.render_qmd import QmdDoc
from selfmodel.report.sections.common import Report, load, md_table, num, pct

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "regression" / "results_default.json"
#: the longest code cell the report may have (issue 31: a cell calls the package, nothing more)
MAX_CELL_LINES = 15
#: what every results.json has; the other keys are optional (a stage not run leaves them out)
REQUIRED = ("data", "models", "tasks", "by_model_task", "scale_effect", "diagnostics", "settings")

matplotlib.use("Agg")


def _blocks(kind: str) -> list[tuple[str, Callable[[Report], Any]]]:
    """Every public function of a section module that takes the report and returns ``kind``."""
    out = []
    for name in sections.__all__:
        module = getattr(sections, name)
        if not inspect.ismodule(module) or name == "common":
            continue
        for fname in module.__all__:
            f = getattr(module, fname)
            if not inspect.isfunction(f):
                continue
            sig = inspect.signature(f)
            shown = str(sig.return_annotation)
            if list(sig.parameters) == ["rep"] and (shown == kind or kind == "Figure" and "Figure" in shown):
                out.append((f"{name}.{fname}", f))
    return out


TEXT = _blocks("str")
FIGURES = _blocks("Figure")


def _report(results: dict[str, Any], folder: Path = FIXTURE.parent) -> Report:
    return Report(results, {}, None, folder, 6.3, 8.5)


@pytest.fixture
def full() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text())


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_the_blocks_are_found() -> None:
    names = {n for n, _ in TEXT}
    assert len(TEXT) >= 40 and len(FIGURES) >= 9
    assert {"verdict.summary", "hypotheses.table", "training.effects", "appendix.per_task_tables"} <= names
    assert "scaling.accuracy_curves" in {n for n, _ in FIGURES}


@pytest.mark.parametrize(("name", "block"), TEXT, ids=[n for n, _ in TEXT])
def test_every_text_block_writes_markdown_from_full_results(name, block, full) -> None:
    text = block(_report(full))
    assert isinstance(text, str) and text.strip(), name
    assert "{'" not in text and "None" not in text.replace("none", ""), name  # no dict or None leaks


@pytest.mark.parametrize(("name", "block"), FIGURES, ids=[n for n, _ in FIGURES])
def test_every_figure_block_draws_from_full_results(name, block, full) -> None:
    fig = block(_report(full))
    if name in ("scaling.slope_figure", "model.rank_figure"):  # they read the saved fit: none here
        assert fig is None
        return
    if name == "contrasts.reliability_figure":  # the default run fits no contrasts (test_contrasts)
        assert full["confidence_calibration_contrasts"] is None and fig is None
        return
    assert isinstance(fig, Figure), name
    assert any(ax.get_visible() and (ax.lines or ax.collections or ax.images or ax.patches)
               for ax in fig.axes), name


def test_blocks_say_what_is_missing_when_a_stage_did_not_run(full) -> None:
    bare = {k: full[k] for k in REQUIRED}
    rep = _report(bare)
    for name, block in TEXT:
        assert isinstance(block(rep), str), name
    for name, block in FIGURES:
        if name not in ("descriptives.accuracy_figure", "descriptives.heatmap_figure"):
            assert block(rep) is None, name
    assert sections.missingness.summary(rep) == "No missingness analysis in these results."
    assert sections.detectable.summary(rep).startswith("No power analysis")
    assert sections.training.effects(rep).startswith("Not estimated")
    assert sections.self_other.tables(rep) == "No self-versus-other analysis in these results."
    assert sections.robustness.prior_summary(rep).startswith("Not run")
    assert "Robustness refits were not run" in sections.verdict.robustness_summary(rep)
    assert sections.operating_characteristics.intro(rep).startswith("No operating-characteristics study found")
    assert sections.hypotheses.table(rep) == ""


def test_numbers_in_the_text_are_the_results(full) -> None:
    changed = copy.deepcopy(full)
    changed["data"]["records_read"] = 123457
    changed["scale_effect"]["mean"] = 0.4321
    task = sorted(changed["scale_effect"]["per_task"])[0]
    changed["scale_effect"]["per_task"][task]["decision"] = "worsens"
    rep = _report(changed)
    assert "**123457**" in sections.data.accounting(rep)
    table = sections.verdict.table(rep)
    assert "| average over tasks | 0.432 |" in table
    row = next(line for line in table.splitlines() if line.startswith(f"| {task} |"))
    assert row.endswith("| `worsens` |")
    before = next(line for line in sections.verdict.table(_report(full)).splitlines()
                  if line.startswith(f"| {task} |"))
    assert before.endswith(f"| `{full['scale_effect']['per_task'][task]['decision']}` |")


def test_md_table_aligns_and_sizes_the_dashes() -> None:
    text = md_table(["a", "long header"], [["x" * 50, 1], ["**y**", 22]], ["---", "---:"])
    lines = text.splitlines()
    assert lines[0] == "| a | long header |"
    assert lines[1] == "| " + "-" * 40 + " | " + "-" * 11 + ": |"  # widths capped at 40, at least 4
    assert lines[3] == "| **y** | 22 |"


def test_num_and_pct_never_hide_a_small_value() -> None:
    assert num(0.0004) == "0.0004" and num(None) == "n/a" and num(0.5, "+.2f") == "+0.50"
    assert pct(None) == "n/a" and pct(0.1234) == "12.3%"


def test_load_reads_a_results_folder_and_sets_the_style(tmp_path, full) -> None:
    (tmp_path / "results.json").write_text(json.dumps(full))
    width = plt.rcParams["figure.figsize"][0]
    with matplotlib.rc_context():
        rep = load(tmp_path)
        assert rep.run == {} and rep.cells is None and rep.fit_file is None
        assert rep.fig_w == width and plt.rcParams["figure.figsize"][1] == pytest.approx(0.45 * width)
        assert plt.rcParams["text.parse_math"] is False
    assert rep.results == full


def test_report_cells_are_short_and_define_nothing() -> None:
    doc = QmdDoc.read(REPORT_QMD)
    code = [c for c in doc.cells if c.kind == "code"]
    assert len(code) >= 40
    long = {c.name: len(c.source.splitlines()) for c in code if len(c.source.splitlines()) > MAX_CELL_LINES}
    assert not long, f"cells longer than {MAX_CELL_LINES} lines: move the code into analysis/report/sections/: {long}"
    defining = [c.name for c in code if any(line.startswith(("def ", "class ")) for line in c.source.splitlines())]
    assert not defining, f"functions belong in analysis/report/sections/, not in cells: {defining}"


def test_cell_length_check_can_fail(tmp_path) -> None:
    qmd = tmp_path / "long.qmd"
    qmd.write_text("---\ntitle: t\n---\n\n```{python}\n#| label: long\n" + "x = 1\n" * 16 + "```\n")
    cell = next(c for c in QmdDoc.read(qmd).cells if c.kind == "code")
    assert len(cell.source.splitlines()) == 16 > MAX_CELL_LINES


def test_python_source_holds_every_cell_in_order() -> None:
    doc = QmdDoc.read(REPORT_QMD)
    source = doc.python_source()
    compile(source, "report_cells.py", "exec")  # one valid module
    at = 0
    for c in (c for c in doc.cells if c.kind == "code"):
        at = source.index(c.source.strip(), at)
    assert source.startswith('"""') and "# ruff: noqa: E402" in source


def test_a_failed_fit_shows_no_decision_in_the_verdict_tables() -> None:
    """Issue 28.4: the first screen's tables print 'not decided' for a fit that failed its gate."""
    from selfmodel.decisions.verdict import NOT_DECIDED

    results = json.loads(FIXTURE.read_text())
    results["diagnostics"]["passed"] = results["model_zoo"]["sdt"]["diagnostics"]["passed"] = True
    assert NOT_DECIDED not in sections.verdict.sdt_table(_report(results))
    assert NOT_DECIDED not in sections.verdict.table(_report(results))
    failed = {"passed": False, "checks": [{"name": "r_hat", "passed": False, "threshold": "<= 1.01",
                                           "value": 1.02}]}
    results["model_zoo"]["sdt"]["diagnostics"] = failed
    text = sections.verdict.sdt_table(_report(results))
    assert text.count(NOT_DECIDED) == len(results["sdt_effect"]["sensitivity"]["per_task"]) + len(
        results["sdt_effect"]["bias"]["per_task"]) + ("d' average" in text)
    assert "max R\\-hat 1\\.02" in text  # escaped for Markdown
    assert NOT_DECIDED not in sections.verdict.table(_report(results))  # the accuracy fit passed
    results["diagnostics"] = failed
    assert NOT_DECIDED in sections.verdict.table(_report(results))
    rows = [line for line in sections.verdict.table(_report(results)).splitlines() if line.startswith("| ")]
    assert rows and not any(f"`{d}`" in line for line in rows for d in ("improves", "credibly_positive"))


def test_operating_characteristics_arms_at_other_settings_than_this_run_are_named() -> None:
    """The SDT samples at its own settings since issue 28.4: the study's d'/criterion arms
    (run before at the run-wide settings) are said not to be at this run's settings."""
    results = json.loads(FIXTURE.read_text())
    assert results["settings"]["sampler_by_model"]["sdt"]["draws"] == 3000
    text = sections.operating_characteristics.pipeline(_report(results))
    assert "not at this run's settings for that model" in text and "dprime" in text
    assert "accuracy</code>" not in text.split("The arms")[1].split("not at this run")[0]
    results["settings"]["sampler_by_model"] = {}
    assert "not at this run's settings" not in sections.operating_characteristics.pipeline(_report(results))


def test_training_null_table_shows_no_rescoring_contrast(full) -> None:
    """The shipped training null study predates issue 28.1 and holds a rescoring contrast
    (``privileged_vs_base:*``) the pipeline no longer decides: the report never shows it.
    """
    from selfmodel.report.sections import training

    nc = full["training_effect"]["null_operating_characteristics"]
    assert nc.get("available") and any(k.startswith("privileged_vs_base:") for k in nc["rates"])
    # the older study is printed only where the study at the pipeline's settings is absent
    older = {**full, "training_effect": {k: v for k, v in full["training_effect"].items()
                                         if k != "operating_characteristics"}}
    text = training.operating_characteristics(_report(older))
    assert "accuracy\\, trained tasks" in text  # the table (escaped markdown) is there
    assert "contrast against the base" not in text and "privileged access" not in text


def test_operating_characteristics_arm_run_past_its_target_reads_as_such() -> None:
    """An arm whose fits are shared with a null arm has more data sets than its coverage target;
    the table says "(target N)" rather than "200 of 100", and a short arm stays "partial"."""
    results = json.loads(FIXTURE.read_text())
    arms = results["operating_characteristics"]["pipeline"]["arms"]
    name = "default:accuracy:slope0.4"
    shown = sections.common.code(name)
    arms[name] = {**arms[name], "n": 200, "target_n": 100, "complete": True}
    row = next(line for line in sections.operating_characteristics.pipeline(_report(results)).splitlines() if shown in line)
    assert "200 (target 100)" in row and "200 of 100" not in row
    arms[name] = {**arms[name], "n": 30, "target_n": 100, "complete": False}
    row = next(line for line in sections.operating_characteristics.pipeline(_report(results)).splitlines() if shown in line)
    assert "30 of 100 (partial)" in row


def test_how_obtained_says_reweighted_or_refitted_and_why():
    from selfmodel.report.sections.robustness import how_obtained

    rw = how_obtained("priors x0.5", {"method": "psis", "pareto_k": 0.123, "k_threshold": 0.7})
    assert rw == ("priors x0.5: the main fit's draws reweighted by PSIS (Pareto k 0.12, at most "
                  "0.70), no refit")
    refit = how_obtained("priors x2", {"method": "refit", "pareto_k": 1.1, "k_threshold": 0.7,
                                       "reason": "Pareto k 1.10 above 0.70: reweighting unreliable"})
    assert refit == "priors x2: refitted (Pareto k 1.10 above 0.70: reweighting unreliable)"
    assert "not recorded" in how_obtained("priors x2", None)
