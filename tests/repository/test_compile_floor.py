"""Issue 32's floor (``bench/compile_floor.py``): its ratios and the sentence the performance page prints."""

from __future__ import annotations

import pytest

from bench import compile_floor, render_docs


def _rows(compile_cpu: float, sample_cpu: float, naive_wall: float) -> dict[str, dict[str, float]]:
    cold: dict[str, float] = {}
    warm: dict[str, float] = {}
    for s in compile_floor.STRUCTURES:
        cold.update({f"{s}_cpu_s": compile_cpu, f"{s}_sample_cpu_s": sample_cpu,
                     f"{s}_sample_wall_s": sample_cpu / 2, f"{s}_draws": 2000})
        warm[f"{s}_cpu_s"] = compile_cpu / 4
    return {"naive": {"wall_s": naive_wall}, "cold": cold, "warm": warm}


def test_floor_ratios_sum_structures_over_cores() -> None:
    n = len(compile_floor.STRUCTURES)
    r = compile_floor.floor_ratios(_rows(10.0, 4.0, 20.0), cores=2)
    assert r["cold_compile_cpu_s"] == 10.0 * n
    assert r["warm_compile_cpu_s"] == 2.5 * n
    assert r["cold_sample_cpu_s"] == 4.0 * n
    assert r["cold_compile_over_naive_wall"] == pytest.approx(10.0 * n / 2 / 20.0, abs=1e-3)
    assert r["cold_compile_and_sample_over_naive_wall"] == pytest.approx(14.0 * n / 2 / 20.0,
                                                                         abs=1e-3)


@pytest.mark.parametrize(("naive", "word"), [(10.0, "above"), (1000.0, "within")])
def test_floor_section_says_where_the_floor_lies(monkeypatch: pytest.MonkeyPatch, naive: float,
                                                 word: str) -> None:
    rows = _rows(10.0, 4.0, naive)
    res = {"rows": rows, "ratios": compile_floor.floor_ratios(rows), "cores": 2,
           "command": "bench/compile_floor.py", "machine": {}, "measured_utc": "2026-12-04T00:00"}
    monkeypatch.setattr(render_docs, "load", lambda name: res if name == "compile_floor" else None)
    text = render_docs.section_floor()
    floor = res["ratios"]["cold_compile_and_sample_over_naive_wall"]
    assert f"{floor:.2f}x: {word} the 1.5x bound" in text
    assert "saves 75% of the compile" in text
    for s in compile_floor.STRUCTURES:
        assert f"| {s} |" in text


def test_profile_sentence_splits_the_run_at_the_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    prof = {"command": "bench/profile_run.py data_raw --out X --name run_profile_issue32",
            "measured_utc": "2026-12-04T00:00", "stages": [
                {"stage": "stage_fits", "fits": 5, "compile_s": 60.0, "sample_s": 20.0},
                {"stage": "stage_robustness", "fits": 10, "compile_s": 90.0, "sample_s": 50.0},
                {"stage": "TOTAL (run)", "wall_s": 300.0, "fits": 15}]}
    monkeypatch.setattr(render_docs, "load", lambda name: prof if name == "run_profile_issue32" else None)
    text = render_docs.profile_beyond_floor()
    assert "300 s wall, 15 fits" in text
    assert "(5 fits) spent 60 s compiling and 20 s sampling" in text
    assert "90 s compiling and 50 s sampling; the other 80 s" in text
