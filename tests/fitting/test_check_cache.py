"""Saved derived results: ``selfmodel.fitting.sampling.cached_json`` and the checks of ``selfmodel.pipeline.model_stage``.

An unchanged second run must reuse the prior/posterior predictive checks and LOO of a
reused fit (they cost more than loading the fit), recompute them when anything they depend
on changes, and survive a damaged file.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from selfmodel.common import arviz_ops, seal
from selfmodel.fitting import checks
from selfmodel.fitting.sampling import Fit, cached_json
from selfmodel.pipeline import model_stage as zoo


class Counter:
    """A compute function that counts its calls and returns a fresh result each time."""

    def __init__(self, value: object = None) -> None:
        self.calls = 0
        self.value = value

    def __call__(self) -> object:
        self.calls += 1
        return self.value if self.value is not None else {"x": 0.1 * self.calls, "n": [1, 2]}


def test_without_a_folder_computes_every_time() -> None:
    c = Counter()
    cached_json(None, "a", {"k": 1}, c)
    cached_json(None, "a", {"k": 1}, c)
    assert c.calls == 2


def test_reused_while_the_key_is_unchanged(tmp_path: Path) -> None:
    c = Counter()
    first = cached_json(tmp_path, "a", {"k": 1, "fit": "abc"}, c)
    again = cached_json(tmp_path, "a", {"fit": "abc", "k": 1}, c)  # key order is irrelevant
    assert c.calls == 1 and again == first == {"x": 0.1, "n": [1, 2]}
    assert len(list(tmp_path.glob("a-*.json"))) == 1


def test_any_change_of_the_key_recomputes(tmp_path: Path) -> None:
    c = Counter()
    cached_json(tmp_path, "a", {"k": 1, "fit": "abc"}, c)
    cached_json(tmp_path, "a", {"k": 2, "fit": "abc"}, c)
    cached_json(tmp_path, "a", {"k": 1, "fit": "abd"}, c)
    assert c.calls == 3


@pytest.mark.parametrize(
    "damage",
    [b"", b"{not json", b"\xff\xfe\x00", b"[1, 2]", b'{"key": "0", "value": 1}', b'{"value": 5}'],
)
def test_a_damaged_file_is_recomputed_and_repaired(tmp_path: Path, damage: bytes) -> None:
    c = Counter()
    cached_json(tmp_path, "a", {"k": 1}, c)
    (path,) = tmp_path.glob("a-*.json")
    path.write_bytes(damage)
    assert cached_json(tmp_path, "a", {"k": 1}, c) == {"x": 0.2, "n": [1, 2]}
    assert c.calls == 2
    assert cached_json(tmp_path, "a", {"k": 1}, c) == {"x": 0.2, "n": [1, 2]}  # repaired
    assert c.calls == 2


def test_a_file_saved_under_another_key_is_not_trusted(tmp_path: Path) -> None:
    """A file renamed onto another key's name (same prefix) is recomputed."""
    c = Counter()
    cached_json(tmp_path, "a", {"k": 1}, c)
    (one,) = tmp_path.glob("a-*.json")
    cached_json(tmp_path, "a", {"k": 2}, c)
    (two,) = set(tmp_path.glob("a-*.json")) - {one}
    two.write_bytes(one.read_bytes())
    cached_json(tmp_path, "a", {"k": 2}, c)
    assert c.calls == 3


def test_computed_and_reused_results_are_identical(tmp_path: Path) -> None:
    """The first call returns the JSON round trip too (tuples become lists, as when reused)."""
    value = {"t": (1, 2.5), "nan": float("nan"), "none": None, "tiny": 1e-300, "b": True}
    first = cached_json(tmp_path, "a", {"k": 1}, Counter(value))
    again = cached_json(tmp_path, "a", {"k": 1}, Counter(value))
    assert json.dumps(first) == json.dumps(again)
    assert first["t"] == [1, 2.5]


def test_unserialisable_results_are_returned_unsaved(tmp_path: Path) -> None:
    obj = {"s": {1, 2}}
    assert cached_json(tmp_path, "a", {"k": 1}, Counter(obj)) is obj
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------ the checks, through zoo.run_checks


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Replace the three checks' computations by counters (tested in test_checks.py)."""
    calls = {"prior_predictive": 0, "posterior_predictive": 0, "loo": 0}

    def make(name: str):
        def fake(*args: object, **kwargs: object) -> dict[str, object]:
            calls[name] += 1
            return {"check": name, "call": calls[name], "seed": kwargs.get("seed")}

        return fake

    for name in calls:
        monkeypatch.setattr(checks, f"_{name}", make(name))
    return calls


def _fit(key: str | None) -> Fit:
    prov = {"cache_key": key} if key else {}
    return Fit("scale", arviz_ops.from_datasets(), {}, prov)


CELLS = pl.DataFrame({"model": ["a", "b"], "task": ["t", "t"], "n": [10, 12], "k": [5, 9]})


def test_checks_are_reused_for_an_unchanged_fit(tmp_path: Path, counted: dict[str, int]) -> None:
    first = zoo.run_checks("scale", _fit("k1"), CELLS, seed=3, loo=True, cache_dir=tmp_path)
    again = zoo.run_checks("scale", _fit("k1"), CELLS, seed=3, loo=True, cache_dir=tmp_path)
    assert again == first
    assert counted == {"prior_predictive": 1, "posterior_predictive": 1, "loo": 1}
    assert sorted(p.name.rsplit("-", 1)[0] for p in tmp_path.iterdir()) == [
        "scale-loo", "scale-posterior_predictive", "scale-prior_predictive"]


def test_checks_follow_the_fit_the_data_and_the_seed(
    tmp_path: Path, counted: dict[str, int]
) -> None:
    zoo.run_checks("scale", _fit("k1"), CELLS, seed=3, loo=True, cache_dir=tmp_path)
    # another fit: the posterior checks again, the prior check (no fit involved) reused
    zoo.run_checks("scale", _fit("k2"), CELLS, seed=3, loo=True, cache_dir=tmp_path)
    assert counted == {"prior_predictive": 1, "posterior_predictive": 2, "loo": 2}
    # other data (even with the same fit key) and another seed: everything again
    other = CELLS.with_columns(pl.Series("k", [6, 9]))
    zoo.run_checks("scale", _fit("k2"), other, seed=3, loo=True, cache_dir=tmp_path)
    assert counted == {"prior_predictive": 2, "posterior_predictive": 3, "loo": 3}
    out = zoo.run_checks("scale", _fit("k2"), other, seed=4, loo=False, cache_dir=tmp_path)
    assert counted == {"prior_predictive": 3, "posterior_predictive": 4, "loo": 3}
    assert "loo" not in out and out["prior_predictive"]["seed"] == 4


def test_checks_recompute_when_the_code_changes(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    zoo.run_checks("scale", _fit("k1"), CELLS, seed=3, loo=False, cache_dir=tmp_path)
    monkeypatch.setattr(checks, "source_sha256", lambda paths: "edited")
    zoo.run_checks("scale", _fit("k1"), CELLS, seed=3, loo=False, cache_dir=tmp_path)
    assert counted["posterior_predictive"] == 2


def test_checks_survive_a_corrupt_file(tmp_path: Path, counted: dict[str, int]) -> None:
    first = zoo.run_checks("scale", _fit("k1"), CELLS, seed=3, loo=True, cache_dir=tmp_path)
    (loo_file,) = tmp_path.glob("scale-loo-*.json")
    loo_file.write_text('{"key": "')
    again = zoo.run_checks("scale", _fit("k1"), CELLS, seed=3, loo=True, cache_dir=tmp_path)
    assert counted["loo"] == 2 and again["loo"]["call"] == 2
    assert again["prior_predictive"] == first["prior_predictive"]


def test_checks_are_not_saved_without_a_folder_or_a_fit_key(
    tmp_path: Path, counted: dict[str, int]
) -> None:
    """No folder: nothing saved; a fit without a cache key: only the prior check (no fit)."""
    zoo.run_checks("scale", _fit("k1"), CELLS, seed=3, loo=True, cache_dir=None)
    zoo.run_checks("scale", _fit(None), CELLS, seed=3, loo=True, cache_dir=tmp_path)
    zoo.run_checks("scale", _fit(None), CELLS, seed=3, loo=True, cache_dir=tmp_path)
    assert counted == {"prior_predictive": 2, "posterior_predictive": 3, "loo": 3}
    assert [p.name.rsplit("-", 1)[0] for p in tmp_path.iterdir()] == ["scale-prior_predictive"]


def test_checks_outside_the_zoo_take_a_cache_dir(tmp_path: Path, counted: dict[str, int]) -> None:
    """``checks.loo(..., cache_dir=...)`` directly, with other arguments as other keys."""
    from selfmodel import models

    scale = models.get("scale")
    checks.loo(_fit("k1"), scale, CELLS, cache_dir=tmp_path)
    checks.loo(_fit("k1"), scale, CELLS, cache_dir=tmp_path)
    checks.loo(_fit("k1"), scale, CELLS, max_draws=400, cache_dir=tmp_path)
    checks.loo(_fit("k1"), scale, CELLS.to_pandas(), cache_dir=tmp_path)  # not a polars frame
    assert counted["loo"] == 3


# ------------------------------------------------ content hashes (issue 14)


def test_an_edited_value_with_its_key_intact_is_recomputed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A saved check whose value was edited (key left as it was) fails its content hash."""
    c = Counter()
    cached_json(tmp_path, "a", {"k": 1}, c)
    (path,) = tmp_path.glob("a-*.json")
    saved = json.loads(path.read_text())
    saved["value"]["x"] = 0.99  # e.g. a p-value or a diagnostic made to look better
    path.write_text(json.dumps(saved))
    assert cached_json(tmp_path, "a", {"k": 1}, c) == {"x": 0.2, "n": [1, 2]}
    assert c.calls == 2
    assert "its seal does not verify" in capsys.readouterr().err


@pytest.mark.parametrize("forgery", ["plain sha256", "another user's seal"])
def test_a_value_edited_with_its_hash_recomputed_is_recomputed(
    forgery: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 30: a tampered saved check whose hash was recomputed too fails the seal."""
    import hashlib
    import hmac

    monkeypatch.setenv("SELFMODEL_CACHE_DIR", str(tmp_path / "user-cache"))
    seal.reset()
    try:
        c = Counter()
        cached_json(tmp_path, "a", {"k": 1}, c)
        key_file = tmp_path / "user-cache" / seal.KEY_FILE
        assert key_file.stat().st_mode & 0o077 == 0  # the secret is the user's alone
        (path,) = tmp_path.glob("a-*.json")
        saved = json.loads(path.read_text())
        saved["value"]["x"] = 0.99
        text = json.dumps(saved["value"], sort_keys=True).encode()
        saved["seal"] = (hashlib.sha256(text).hexdigest() if forgery == "plain sha256" else
                         hmac.new(b"0" * 64, b"derived\0" + text, hashlib.sha256).hexdigest())
        path.write_text(json.dumps(saved))
        assert cached_json(tmp_path, "a", {"k": 1}, c) == {"x": 0.2, "n": [1, 2]}
        assert c.calls == 2
        assert "its seal does not verify" in capsys.readouterr().err
        assert cached_json(tmp_path, "a", {"k": 1}, c) == {"x": 0.2, "n": [1, 2]}
        assert c.calls == 2  # repaired: reused again
    finally:
        seal.reset()


@pytest.fixture
def small_fit_dir(
    tmp_path_factory: pytest.TempPathFactory, fake_nutpie: dict[str, int]
) -> tuple[Path, pl.DataFrame, Fit]:
    """A folder holding one saved fit; sampled by the fake nutpie (prior draws, no compile):
    what is tested is how a saved fit is verified and reused, not its draws."""
    from selfmodel.records.simulate import simulate_scale_cells

    data, _ = simulate_scale_cells(seed=2, n_families=2, sizes_per_family=2, n_tasks=1,
                                   n_per_cell=50)
    folder = tmp_path_factory.mktemp("fits")
    first = _refit(folder, data)
    assert fake_nutpie == {"compile": 1, "sample": 1}
    return folder, data, first


def _refit(folder: Path, data: pl.DataFrame) -> Fit:
    from selfmodel.fitting.sampling import SamplerSettings, fit

    settings = SamplerSettings(draws=100, tune=100, chains=2, cores=2)
    return fit("pooled", data, seed=1, settings=settings, cache_dir=folder)


def test_saved_fits_are_verified_on_read(
    small_fit_dir: tuple[Path, pl.DataFrame, Fit], capsys: pytest.CaptureFixture[str],
    fake_nutpie: dict[str, int],
) -> None:
    folder, data, first = small_fit_dir
    (nc,) = folder.glob("pooled-*.nc")
    assert _refit(folder, data).reused is True  # intact: reused

    # edited draws, provenance intact: not reused, sampled again with a note
    idata = arviz_ops.load(nc)
    post = arviz_ops.posterior(idata)
    var = sorted(str(v) for v in post.data_vars)[0]
    idata["posterior"] = post.assign({var: post[var] + 1.0})  # e.g. a slope's sign flipped
    edited = folder / "edited.nc"
    arviz_ops.save(idata, edited)
    edited.replace(nc)
    again = _refit(folder, data)
    assert again.reused is False
    assert "its seal does not verify" in capsys.readouterr().err
    np_equal = (again.idata.posterior[var].values == first.idata.posterior[var].values).all()
    assert bool(np_equal)  # the same seed gives the original draws back

    # truncated file: no OSError, sampled again with a note
    nc.write_bytes(nc.read_bytes()[:200])
    third = _refit(folder, data)
    assert third.reused is False
    assert "saved fit unreadable" in capsys.readouterr().err
    assert _refit(folder, data).reused is True  # repaired
    assert fake_nutpie["sample"] == 3  # first, edited, truncated; never for a reused fit


def test_diagnostics_come_from_the_draws(
    small_fit_dir: tuple[Path, pl.DataFrame, Fit], fake_nutpie: dict[str, int]
) -> None:
    """No diagnostics file is read: an edited one cannot make a fit pass."""
    folder, data, first = small_fit_dir
    assert not list(folder.glob("*diagnostics*"))
    reused = _refit(folder, data)
    assert reused.reused and fake_nutpie["sample"] == 1
    assert reused.diagnostics == first.diagnostics
