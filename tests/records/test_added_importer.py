"""Adding a log importer is one file and one registration line.

The importer (``tests/fixtures/added_importer/tsv_log.py``) lives outside ``analysis/``; it is
registered with :func:`selfmodel.records.importers.registry.register`. Nothing under
``analysis/`` names it: ``selfmodel import`` lists and runs it, its records reach
``results.json`` and the report.
"""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest

from selfmodel.cli import main
from selfmodel.records.importers import registry
from selfmodel.report.sections import data as data_sec
from selfmodel.report.sections.common import Report, esc

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "tests" / "fixtures" / "added_importer" / "tsv_log.py"
SIZES = {"a-1b": ("a", 1.0), "a-8b": ("a", 8.0), "b-3b": ("b", 3.0), "b-30b": ("b", 30.0),
         "c-2b": ("c", 2.0), "c-70b": ("c", 70.0)}
QUICK = ["--draws", "50", "--tune", "50", "--chains", "2", "--jobs", "1", "--quiet"]


@pytest.fixture
def tsvlog():
    spec = importlib.util.spec_from_file_location("tsv_log", PLUGIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    registry.register(module.IMPORTER)  # the registration line
    yield module
    registry.unregister(module.IMPORTER.name)


def _log(path: Path, n_items: int = 30) -> int:
    rnd = random.Random(7)
    lines = ["who\tsize_b\tmaker\tbench\tq\tguess\tright"]
    for model, (family, size) in SIZES.items():
        for i in range(n_items):
            right = rnd.random() < 0.6
            guess = right if rnd.random() < 0.7 else not right
            lines.append(f"{model}\t{size}\t{family}\tqa\tq{i}\t{'y' if guess else 'n'}\t{int(right)}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines) - 1


def test_a_registered_importer_is_a_cli_choice_and_a_name_registers_once(tsvlog, capsys) -> None:
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    assert "tsvlog" in capsys.readouterr().out
    with pytest.raises(ValueError, match="registered already"):
        registry.register(tsvlog.IMPORTER)
    assert "tsvlog" not in registry.log_formats()  # it reads no mapping


def test_unregistered_it_is_no_choice(capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["import", "tsvlog", "x.tsv", "--preview"])
    assert stop.value.code == 2
    assert "invalid choice: 'tsvlog'" in capsys.readouterr().err


def test_its_records_reach_results_and_the_report(tsvlog, tmp_path: Path,
                                                  fake_nutpie: dict[str, int]) -> None:
    src = tmp_path / "study.tsv"
    n = _log(src)
    imported = tmp_path / "imported"
    assert main(["import", "tsvlog", str(src), "--out", str(imported)]) == 0
    out = tmp_path / "run"
    assert main(["run", str(imported / "records.parquet"), "--registry",
                 str(imported / "registry.csv"), "--out", str(out), "--models", "scale",
                 "--no-power", "--no-robustness", "--no-report", *QUICK]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["data"]["records_used"] == n
    assert sorted(results["data"]["models"]) == sorted(SIZES)
    assert results["scale_effect"]["fit_model"] == "scale"
    # the report's own table of models, from the saved results
    table = data_sec.models_table(Report(results, {}, None, out, 6.3, 8.5))
    assert all(f"| {esc(model)} | {SIZES[model][0]} |" in table for model in SIZES), table
