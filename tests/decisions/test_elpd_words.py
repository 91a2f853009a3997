"""ELPD sentences (analysis/decisions/elpd_words.py) follow the numbers."""

from selfmodel.decisions.elpd_words import elpd_sentence


def test_small_differences_are_not_a_preference():
    s = elpd_sentence(-2.0, 0.5, better="scale model", worse="model without it", unit="cells")
    assert "too small" in s and "predicts" not in s.split(":")[1]


def test_large_differences_within_two_se_are_not_a_preference():
    s = elpd_sentence(6.0, 4.0, better="a", worse="b", unit="models")
    assert "neither model predicts clearly better" in s


def test_a_clear_difference_names_the_winner_by_sign():
    assert "the b predicts held-out models better than the a" in elpd_sentence(
        -9.0, 2.0, better="a", worse="b", unit="models")
    assert "the a predicts held-out cells better than the b" in elpd_sentence(
        9.0, 2.0, better="a", worse="b", unit="cells")
