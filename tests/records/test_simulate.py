"""Tests of the simulated self-prediction logs (``selfmodel.records.simulate``)."""

from __future__ import annotations

import polars as pl
import pytest

from selfmodel.records.simulate import SimulationConfig, simulate


@pytest.mark.parametrize(
    ("seed", "config"),
    [
        (2, None),  # some model x task x repeat frame has no unreadable prediction
        (1, SimulationConfig(repeats=10)),
        (3, SimulationConfig(unreadable_rate=0.0)),  # no unreadable prediction at all
    ],
)
def test_prediction_is_text_for_any_seed_and_repeats(
    seed: int, config: SimulationConfig | None
) -> None:
    """Regression: frames with and without unread predictions used to clash in pl.concat
    (an Object ``prediction`` column against a String one)."""
    records, registry, truth = simulate(seed=seed, config=config)
    cfg = config or SimulationConfig()
    assert records.schema["prediction"] == pl.Utf8
    assert set(records["prediction"].drop_nulls().unique()) <= {"true", "false"}
    unread = records["status"] == "unparsed"
    assert records.filter(unread)["prediction"].null_count() == unread.sum()
    assert records.filter(~unread)["prediction"].null_count() == 0
    assert records["sample"].max() == cfg.repeats - 1
    assert records.select("model", "task", "item_id", "sample").is_duplicated().sum() == 0


def test_same_seed_same_records() -> None:
    first, _, _ = simulate(seed=5)
    second, _, _ = simulate(seed=5)
    assert first.equals(second)
