"""The Python API (issue 13): docs/api.md's examples run; options are the command line's."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from selfmodel import api
from selfmodel.cli import build_parser
from selfmodel.common.paths import DEFAULT_DATA
from selfmodel.pipeline.stages import resolve_inputs
from selfmodel.records.cells import build_cells
from selfmodel.records.contract import DECISIONS, InputError
from selfmodel.records.ingest import ingest, write_ingest
from selfmodel.records.registry import load_registry

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "api.md"
FIXTURE = ROOT / "tests" / "fixtures" / "regression" / "results_default.json"
RUN_BLOCK = "# runs the pipeline"


def doc_blocks(path: Path = DOC) -> list[str]:
    """The ``python`` code blocks of a Markdown page, in order."""
    return re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), re.S | re.M)


def results_folder(out: Path) -> Path:
    """A results folder of the default data without sampling: the regression fixture's
    results.json beside the records, quarantine and cells that ingest writes for the data."""
    from selfmodel.common import outputs

    inputs = resolve_inputs([DEFAULT_DATA], None)
    res = ingest(inputs.record_paths, registry=inputs.registry)
    assert inputs.registry is not None
    with outputs.staged(out) as folder:  # a folder selfmodel made: its manifest lists these
        write_ingest(res, folder)
        build_cells(res.records, load_registry(inputs.registry)).write_parquet(
            folder / "cells.parquet")
        shutil.copy(FIXTURE, folder / "results.json")
    return out


def test_the_doc_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    blocks = doc_blocks()
    assert len(blocks) == 2 and blocks[0].startswith(RUN_BLOCK)
    results_folder(tmp_path / "build")
    monkeypatch.chdir(tmp_path)
    for block in blocks[1:]:  # the first samples: tests/end_to_end/test_wheel.py runs it
        exec(compile(block, str(DOC), "exec"), {})
    decision = json.loads(FIXTURE.read_text())["scale_effect"]["decision"]
    out = capsys.readouterr().out
    assert decision in out and "accuracy_overall" in out


def test_tables_are_frames_of_the_folder(tmp_path: Path) -> None:
    res = api.load(results_folder(tmp_path))
    assert set(res.decisions()["decision"].to_list()) <= set(DECISIONS)
    per_task = res.data["scale_effect"]["per_task"]
    assert res.decisions().height == 1 + len(per_task)
    assert res.hypotheses().height == len(res.data["hypotheses"]["rows"])
    assert "bayes_factor" not in res.hypotheses().columns  # nested: in res.data
    assert res.skill(pandas=True).shape[0] == len(res.data["skill"])
    assert res.table("records").height == res.data["data"]["records_used"]
    assert res.table("quarantine").height == res.data["data"]["records_quarantined"]
    for name in set(api.TABLES) - {"quarantine"}:  # the default data quarantine nothing
        assert res.table(name).height > 0, name
    with pytest.raises(KeyError, match="the tables are cells"):
        res.table("nope")


def test_load_of_a_folder_without_results_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="Run 'selfmodel run --out"):
        api.load(tmp_path)


def test_run_takes_exactly_the_command_lines_options() -> None:
    run_parser = next(a for a in build_parser()._actions if hasattr(a, "choices")
                      and isinstance(a.choices, dict)).choices["run"]
    dests = {a.dest for a in run_parser._actions} - {"help", "paths", "out"}
    ns = api._namespace(["x"], "o", {d: getattr(run_parser.parse_args([]), d) for d in dests})
    assert ns.paths == [Path("x")] and str(ns.out) == "o"
    ns = api._namespace([], "o", {"map": {"item_id": "qid"}, "no_power": True, "draws": 9})
    assert ns.map == ["item_id=qid"] and ns.no_power and ns.draws == 9
    with pytest.raises(TypeError, match="unknown option 'draw'.*draws"):
        api.run([], out="o", draw=10)


def test_import_formats_have_their_own_help(capsys: pytest.CaptureFixture[str]) -> None:
    texts = {}
    for fmt in ("", "seb", "lmeval", "inspect", "mapped"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["import", *([fmt] if fmt else []), "--help"])
        texts[fmt] = capsys.readouterr().out
    assert len(set(texts.values())) == 5
    assert "--mapping" in texts["lmeval"] and "--mapping" not in texts["seb"]
    assert "lm-evaluation-harness" in texts["lmeval"] and "Inspect AI" in texts["inspect"]


def test_run_builds_beside_out_and_swaps_in_whole(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """``api.run`` has the command line's output guarantees: staged, swapped, one writer."""
    from selfmodel.common import outputs

    out = results_folder(tmp_path / "out")
    before = (out / "results.json").read_bytes()
    seen: list[Path] = []

    def fake(cfg, progress, argv):  # the pipeline, reduced to where it writes
        seen.append(cfg.out)
        if len(seen) == 1:
            (cfg.out / "results.json").write_text("{half")
            raise KeyboardInterrupt
        shutil.copy(FIXTURE, cfg.out / "results.json")

    monkeypatch.setattr(api, "run_pipeline", fake)
    with pytest.raises(KeyboardInterrupt):
        api.run([], out=out)
    assert seen[0] == outputs.staging_path(out)  # it never wrote into out itself
    assert (out / "results.json").read_bytes() == before  # interrupted: the previous set
    assert not outputs.staging_path(out).exists()
    with outputs.locked(out), pytest.raises(InputError, match="is writing into it"):
        api.run([], out=out)
    assert len(seen) == 1  # refused before any work
    res = api.run([], out=out)
    assert res.decision == json.loads(FIXTURE.read_text())["scale_effect"]["decision"]
    assert not outputs.staging_path(out).exists()
