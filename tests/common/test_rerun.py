"""An unchanged ``selfmodel run`` reuses its results and report (analysis/common/rerun.py).

The pipeline itself is replaced by a stand-in that writes a minimal results.json, so these
tests count how often the pipeline runs without sampling anything.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import selfmodel.pipeline.stages as pipeline_module
from selfmodel import cli
from selfmodel.common import rerun
from selfmodel.common.paths import DEFAULT_DATA

RESULTS = {
    "scale_effect": {"units": "logit", "decision": "no_credible_effect", "mean": None},
    "diagnostics": {"passed": True},
    "fit": {"file": "fits/x.nc"},
}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    shutil.copytree(DEFAULT_DATA, folder)
    return folder


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    seen: list[Path] = []

    def fake_run(cfg, *, progress=None, argv=None):
        seen.append(cfg.out)
        cfg.out.mkdir(parents=True, exist_ok=True)
        (cfg.out / "fits").mkdir(exist_ok=True)
        (cfg.out / "fits" / "x.nc").write_bytes(b"draws")
        (cfg.out / "results.json").write_text(json.dumps(RESULTS))
        (cfg.out / "run.json").write_text(json.dumps({"started_utc": "t"}))
        return RESULTS

    monkeypatch.setattr(pipeline_module, "run", fake_run)
    return seen


def _run(data: Path, out: Path, *extra: str) -> int:
    return cli.main(["run", str(data), "--out", str(out), "--no-report", *extra])


def test_unchanged_run_is_reused_and_any_change_reruns(data, tmp_path, calls):
    out = tmp_path / "out"
    assert _run(data, out) == 0 and len(calls) == 1
    assert _run(data, out) == 0 and len(calls) == 1  # nothing changed: not run again
    with (data / "records.csv").open("a") as fh:  # one more byte in the records
        fh.write("\n")
    assert _run(data, out) == 0 and len(calls) == 2
    assert _run(data, out, "--seed", "7") == 0 and len(calls) == 3  # another option
    assert _run(data, out, "--seed", "7") == 0 and len(calls) == 3
    assert _run(data, out, "--seed", "7", "--no-cache") == 0 and len(calls) == 4


def test_touched_or_missing_outputs_rerun(data, tmp_path, calls):
    out = tmp_path / "out"
    _run(data, out)
    fit_file = out / "fits" / "x.nc"
    os.utime(fit_file, ns=(0, 0))  # a saved fit touched (or replaced) since the run
    _run(data, out)
    assert len(calls) == 2
    fit_file.unlink()
    _run(data, out)
    assert len(calls) == 3
    (out / "results.json").write_text(json.dumps({**RESULTS, "edited": True}))
    # an edited results.json is the user's now (issue 50): refused before any work, kept
    assert _run(data, out) == 2 and len(calls) == 3
    assert json.loads((out / "results.json").read_text())["edited"] is True
    (out / "results.json").unlink()  # moved away: the run goes ahead
    _run(data, out)
    assert len(calls) == 4
    _run(data, out)
    assert len(calls) == 4


def test_run_key_covers_code_inputs_and_options(data, tmp_path):
    k = rerun.run_key({"seed": 1}, [data])
    assert rerun.run_key({"seed": 1}, [data]) == k
    assert rerun.run_key({"seed": 2}, [data]) != k
    (data / "new.csv").write_text("x\n")  # a new file in an input folder
    assert rerun.run_key({"seed": 1}, [data]) != k
    assert rerun.run_key({"seed": 1}, [tmp_path / "absent"]) != rerun.run_key({"seed": 1}, [])


def test_report_key_follows_what_the_report_reads(tmp_path):
    out = tmp_path
    assert rerun.report_key(out) is None  # no results yet
    (out / "results.json").write_text(json.dumps(RESULTS))
    (out / "run.json").write_text(json.dumps({"started_utc": "t"}))
    (out / "fits").mkdir()
    (out / "fits" / "x.nc").write_bytes(b"draws")
    (out / "report.html").write_text("<html>")
    assert not rerun.report_is_current(out)  # never marked
    rerun.mark_report(out)
    assert rerun.report_is_current(out)
    # the pipeline adds seconds_total after rendering: the report does not show it
    (out / "run.json").write_text(json.dumps({"started_utc": "t", "seconds_total": 3.0}))
    assert rerun.report_is_current(out)
    (out / "run.json").write_text(json.dumps({"started_utc": "u"}))
    assert not rerun.report_is_current(out)
    rerun.mark_report(out)
    (out / "fits" / "x.nc").write_bytes(b"other draws")  # the fit the report plots
    assert not rerun.report_is_current(out)
    rerun.mark_report(out)
    assert not rerun.report_is_current(out, "pdf")  # another format: its own report
    (out / "report.html").unlink()
    assert not rerun.report_is_current(out)


# ------------------------------------------------ sealed records (issue 50)


def test_a_forged_record_is_not_trusted(data, tmp_path, calls):
    """results.json edited and its hash in run-key.json recomputed: the run runs again."""
    import hashlib

    out = tmp_path / "out"
    _run(data, out)
    forged = json.dumps({**RESULTS, "scale_effect": {**RESULTS["scale_effect"], "decision": "improves"}})
    (out / "results.json").write_text(forged)
    record = json.loads((out / rerun.KEY_FILE).read_text())
    record["results_sha256"] = hashlib.sha256(forged.encode()).hexdigest()
    for name, entry in record["outputs"].items():  # every hash of the manifest redone too
        f = out / name
        redone = [f.stat().st_size, f.stat().st_mtime_ns, hashlib.sha256(f.read_bytes()).hexdigest()]
        record["outputs"][name] = redone[:len(entry)]
    (out / rerun.KEY_FILE).write_text(json.dumps(record))
    # edited files are not selfmodel's any more (its manifest has other hashes): the run
    # stops before any work, and neither trusts nor overwrites them (issue 50, output folders)
    assert _run(data, out) == 2 and len(calls) == 1
    assert (out / "results.json").read_text() == forged
    # a forger who also redoes the manifest's plain hashes gets a run, never a reuse
    from selfmodel.common import manifest

    found = manifest.read(out)
    assert found is not None
    (out / manifest.MARKER).write_text(manifest.Manifest(
        files={n: manifest.file_sha256(out / n) for n in found.files},
        folders=found.folders).text())
    _run(data, out)
    assert len(calls) == 2
    assert json.loads((out / "results.json").read_text()) == RESULTS


def test_an_output_replaced_with_its_size_and_time_kept_reruns(data, tmp_path, calls):
    """The manifest holds each output's hash: size and modification time are easy to keep."""
    out = tmp_path / "out"
    _run(data, out)
    fit_file = out / "fits" / "x.nc"
    before = fit_file.stat()
    fit_file.write_bytes(b"DRAWS")  # same size
    os.utime(fit_file, ns=(before.st_atime_ns, before.st_mtime_ns))
    _run(data, out)
    assert len(calls) == 2


def test_a_folder_recorded_under_another_key_reruns_with_a_note(
    data, tmp_path, calls, monkeypatch, capsys
):
    """A results folder copied to a colleague: their selfmodel runs it again, and says why."""
    from selfmodel.common import seal

    out = tmp_path / "out"
    monkeypatch.setenv("SELFMODEL_CACHE_DIR", str(tmp_path / "mine"))
    seal.reset()
    try:
        _run(data, out)
        monkeypatch.setenv("SELFMODEL_CACHE_DIR", str(tmp_path / "colleague"))
        seal.reset()
        capsys.readouterr()
        _run(data, out)
        assert len(calls) == 2
        assert f"{out / rerun.KEY_FILE}: the record of the run that wrote {out} is not used: its " \
               "seal does not verify" in capsys.readouterr().err
        _run(data, out)
        assert len(calls) == 2  # recorded under the colleague's key: reused from now on
    finally:
        seal.reset()


def test_a_replaced_report_is_not_current_even_restamped(tmp_path):
    """An unchanged run renders a report that was replaced, even with its stamp's hash redone."""
    import hashlib

    out = tmp_path
    (out / "results.json").write_text(json.dumps(RESULTS))
    (out / "report.html").write_text("<html>")
    rerun.mark_report(out)
    assert rerun.report_is_current(out)
    (out / "report.html").write_text("<html>forged</html>")  # the report itself replaced
    assert not rerun.report_is_current(out)
    stamp = rerun.report_key_file(out / "report.html")
    saved = json.loads(stamp.read_text())
    forged = hashlib.sha256(b"<html>forged</html>").hexdigest()
    stamp.write_text(json.dumps({**saved, "report_sha256": forged}))
    assert not rerun.report_is_current(out)
