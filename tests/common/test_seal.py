"""Saved fits are sealed with the user's key and never used unverified (issue 50).

A saved fit whose draws were edited and whose plain hash was recomputed with selfmodel's own
function, one whose provenance or labels were edited, a truncated one, one sealed under
another user's key and any fit when no key can be kept are all sampled again with a note:
the results are those of a real fit. Fits are sampled by the fake nutpie (prior draws, no
compile, ``tests/fakes.py``): what is tested is how a saved fit is verified, not its draws.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from selfmodel.common import arviz_ops, caches, seal
from selfmodel.fitting import fitpool
from selfmodel.fitting.sampling import Fit, SamplerSettings, cached_json, content_sha256, fit

#: Attributes a forger sets to the plain hash: the one fits carried before issue 50, and the seal.
HASH_ATTRS = ("selfmodel_content_sha256", "selfmodel_seal")


@pytest.fixture
def user_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This test's user cache folder (its key made on first use), forgotten afterwards."""
    folder = tmp_path / "user-cache"
    monkeypatch.setenv("SELFMODEL_CACHE_DIR", str(folder))
    seal.reset()
    yield folder
    seal.reset()


def _fit(folder: Path, data: pl.DataFrame) -> Fit:
    settings = SamplerSettings(draws=60, tune=60, chains=2, cores=2)
    return fit("scale", data, seed=1, settings=settings, cache_dir=folder)


@pytest.fixture
def saved(
    tmp_path: Path, user_key: Path, fake_nutpie: dict[str, int]
) -> tuple[Path, pl.DataFrame, Fit, Path]:
    """A results folder holding one saved scale fit, sealed with the test user's key."""
    from selfmodel.records.simulate import simulate_scale_cells

    data, _ = simulate_scale_cells(seed=2, n_families=2, sizes_per_family=2, n_tasks=2,
                                   n_per_cell=50)
    folder = tmp_path / "fits"
    first = _fit(folder, data)
    (nc,) = folder.glob("scale-*.nc")
    assert _fit(folder, data).reused and fake_nutpie["sample"] == 1  # intact: reused
    return folder, data, first, nc


def _rewrite(nc: Path, idata: arviz_ops.InferenceData) -> None:
    tmp = nc.with_suffix(".tmp")
    arviz_ops.save(idata, tmp)
    tmp.replace(nc)


def _shift_beta(idata: arviz_ops.InferenceData) -> None:
    post = arviz_ops.posterior(idata)
    idata["posterior"] = post.assign(beta=post["beta"] + 5.0)  # the issue's forgery


def _swap_labels(idata: arviz_ops.InferenceData) -> None:
    post = arviz_ops.posterior(idata)
    dim = next(d for d in post["v_model"].dims if d not in ("chain", "draw"))
    idata["posterior"] = post.assign_coords({dim: post[dim].values[::-1]})  # who is who


def _edit_provenance(idata: arviz_ops.InferenceData) -> None:
    prov = json.loads(idata.attrs["selfmodel_provenance"])
    prov["sampler"]["draws"] = 4000  # the report would state settings that were not used
    idata.attrs["selfmodel_provenance"] = json.dumps(prov, sort_keys=True)


@pytest.mark.parametrize("forge", [_shift_beta, _swap_labels, _edit_provenance],
                         ids=["draws shifted", "labels swapped", "provenance edited"])
def test_a_forged_fit_with_its_hash_recomputed_is_refitted(
    forge, saved, capsys: pytest.CaptureFixture[str], fake_nutpie: dict[str, int]
) -> None:
    """The issue's reproduction: every beta draw +5, the hash recomputed with content_sha256."""
    folder, data, first, nc = saved
    idata = arviz_ops.load(nc)
    forge(idata)
    for attr in HASH_ATTRS:
        idata.attrs[attr] = content_sha256(idata)
    _rewrite(nc, idata)
    capsys.readouterr()
    again = _fit(folder, data)
    assert again.reused is False and fake_nutpie["sample"] == 2
    err = capsys.readouterr().err
    assert f"{nc}: saved fit not used: its seal does not verify" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    for var in ("beta", "v_model"):  # the results are those of a real fit: the same draws
        np.testing.assert_array_equal(again.idata.posterior[var].values,
                                      first.idata.posterior[var].values)
    assert again.provenance["sampler"] == first.provenance["sampler"]
    assert _fit(folder, data).reused is True  # the file was replaced by the real fit


@pytest.mark.parametrize("keep", [0, 200, 0.5, 0.9])
def test_a_truncated_fit_is_refitted(
    keep: float, saved, capsys: pytest.CaptureFixture[str], fake_nutpie: dict[str, int]
) -> None:
    """Cut anywhere (a copy or a write that did not finish): unreadable, or its seal fails."""
    folder, data, first, nc = saved
    raw = nc.read_bytes()
    nc.write_bytes(raw[:int(len(raw) * keep) if isinstance(keep, float) else keep])
    capsys.readouterr()
    again = _fit(folder, data)
    assert again.reused is False and fake_nutpie["sample"] == 2
    err = capsys.readouterr().err
    assert err.startswith(f"selfmodel: note: {nc}: saved fit ") and err.count("\n") == 1
    np.testing.assert_array_equal(again.idata.posterior["beta"].values,
                                  first.idata.posterior["beta"].values)


def test_a_fit_sealed_under_another_key_is_refitted(
    saved, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    fake_nutpie: dict[str, int],
) -> None:
    """A results folder copied to a colleague (or made on another machine): refitted, with a note."""
    folder, data, _, nc = saved
    monkeypatch.setenv("SELFMODEL_CACHE_DIR", str(tmp_path / "colleague-cache"))
    seal.reset()
    capsys.readouterr()
    assert _fit(folder, data).reused is False and fake_nutpie["sample"] == 2
    assert f"{nc}: saved fit not used: its seal does not verify" in capsys.readouterr().err
    assert _fit(folder, data).reused is True  # now sealed with the colleague's key


def test_a_fit_made_before_seals_is_refitted(
    saved, capsys: pytest.CaptureFixture[str], fake_nutpie: dict[str, int]
) -> None:
    """A fit carrying only the plain hash of earlier versions is not trusted either."""
    folder, data, _, nc = saved
    idata = arviz_ops.load(nc)
    del idata.attrs["selfmodel_seal"]
    idata.attrs["selfmodel_content_sha256"] = content_sha256(idata)
    _rewrite(nc, idata)
    assert _fit(folder, data).reused is False
    assert "its seal does not verify" in capsys.readouterr().err


@pytest.fixture
def no_key_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Neither the cache folder nor a temporary folder can be made (both under a plain file)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SELFMODEL_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr("tempfile.tempdir", str(blocker / "tmp"))
    monkeypatch.setattr(caches, "_private", {})
    seal.reset()
    yield
    seal.reset()


def test_with_no_writable_key_location_nothing_saved_earlier_is_reused(
    saved, no_key_location: None, capsys: pytest.CaptureFixture[str],
    fake_nutpie: dict[str, int],
) -> None:
    """No plain-hash fallback: a note once, the earlier fit refitted, and no traceback."""
    folder, data, first, nc = saved
    capsys.readouterr()
    again = _fit(folder, data)
    assert again.reused is False and fake_nutpie["sample"] == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3, err  # the folder, the key, the fit: one line each
    assert "no cache folder can be made" in err[0] and "set SELFMODEL_CACHE_DIR" in err[0]
    assert "no key to seal saved results" in err[1] and "computed again" in err[1]
    assert err[2].startswith(f"selfmodel: note: {nc}: saved fit not used: its seal cannot be "
                             "verified without a key file")
    np.testing.assert_array_equal(again.idata.posterior["beta"].values,
                                  first.idata.posterior["beta"].values)
    assert _fit(folder, data).reused is True  # what this command saved, it may reuse
    seal.reset()  # the next command: a key of its own again, so no reuse
    assert _fit(folder, data).reused is False and fake_nutpie["sample"] == 3


def test_with_no_writable_key_location_derived_results_are_recomputed(
    tmp_path: Path, user_key: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The same for saved checks: before, their seal fell back to a plain SHA-256."""
    calls = []

    def compute() -> dict[str, int]:
        calls.append(1)
        return {"n": len(calls)}

    cached_json(tmp_path, "check", {"k": 1}, compute)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("SELFMODEL_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr("tempfile.tempdir", str(blocker / "tmp"))
    monkeypatch.setattr(caches, "_private", {})
    seal.reset()  # user_key's tear-down forgets this command's own key
    assert cached_json(tmp_path, "check", {"k": 1}, compute) == {"n": 2}
    assert "its seal cannot be verified without a key file" in capsys.readouterr().err
    saved = json.loads(next(tmp_path.glob("check-*.json")).read_text())
    assert "sha256" not in saved and len(saved["seal"]) == 64


@pytest.mark.parametrize("mode", [0o644, 0o620])
def test_a_key_file_others_may_read_or_change_is_not_used(
    mode: int, saved, user_key: Path, capsys: pytest.CaptureFixture[str],
    fake_nutpie: dict[str, int],
) -> None:
    """A key in a shared folder is no secret: this command uses a key of its own instead."""
    folder, data, _, nc = saved
    os.chmod(user_key / seal.KEY_FILE, mode)
    seal.reset()
    capsys.readouterr()
    assert _fit(folder, data).reused is False
    err = capsys.readouterr().err
    assert "others may read or change it" in err and "no key to seal" in err


def test_a_worker_seals_with_its_parent_key_when_no_file_holds_one(
    no_key_location: None,
) -> None:
    """Fits a worker saves are read back by its parent: both seal with the parent's own key."""
    here = seal.seal("fit", b"payload")
    with fitpool.workers(2, report=False):
        pool = fitpool._pool
        assert pool is not None
        there = pool.submit(functools.partial(seal.seal, "fit", b"payload")).result()
    assert there == here


@pytest.mark.e2e
def test_the_issue_forgery_through_the_command_line(tmp_path: Path, capsys) -> None:
    """Issue 50's reproduction: every beta draw of the saved scale fit +5, its hash recomputed.

    Before, the next ``selfmodel fit`` printed "reused saved fit (inputs unchanged)" and its
    decision flipped; now it refits, says why, and its results are the first run's.
    """
    from selfmodel.cli import main

    out = tmp_path / "out"
    argv = ["fit", str(Path(__file__).resolve().parents[2] / "data_raw"), "--out", str(out),
            "--models", "scale", "--no-power", "--no-robustness", "--no-contrasts",
            "--draws", "200", "--tune", "200", "--chains", "2", "--jobs", "1"]
    assert main(argv) == 0
    first = json.loads((out / "results.json").read_text())
    nc = out / first["fit"]["file"]
    idata = arviz_ops.load(nc)
    _shift_beta(idata)
    for attr in HASH_ATTRS:
        idata.attrs[attr] = content_sha256(idata)
    _rewrite(nc, idata)
    capsys.readouterr()
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "reused saved fit" not in err and "Traceback" not in err
    # named in the staging folder the run builds its outputs in (analysis/common/outputs.py)
    assert f"fits/{nc.name}: saved fit not used: its seal does not verify" in err
    again = json.loads((out / "results.json").read_text())
    keys = ("mean", "hdi_low", "hdi_high", "prob_positive", "decision", "per_task")
    assert {k: again["scale_effect"][k] for k in keys} == {k: first["scale_effect"][k] for k in keys}
