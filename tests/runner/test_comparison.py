"""B against A (runner.comparison): the verdict words come from the two intervals (the one helper,
tasks.harness.stats.compare_intervals), never from the point values alone; the delta is the point
values' ratio. Pure logic."""

from __future__ import annotations

import pytest

from kcoral.protocol.evaluations import COMPARISON_WORDS
from kcoral.protocol.models import Score
from kcoral.runner.comparison import compare_scores


def score(speedup: float, lo: float, hi: float) -> Score:
    return Score(speedup=speedup, speedup_lo=lo, speedup_hi=hi)


@pytest.mark.parametrize(
    ("a", "b", "words"),
    [
        (score(1.00, 0.99, 1.01), score(1.20, 1.18, 1.22), "faster"),
        (score(1.20, 1.18, 1.22), score(1.00, 0.99, 1.01), "slower"),
        (score(1.000, 0.998, 1.002), score(1.001, 0.999, 1.003), "same"),
        # B's point value is 10% higher, but the intervals overlap widely: not "faster"
        (score(1.00, 0.80, 1.20), score(1.10, 0.90, 1.30), "ambiguous"),
    ],
)
def test_the_words_come_from_the_intervals(a: Score, b: Score, words: str) -> None:
    found = compare_scores("standard", a, b, "PASS", "PASS")
    assert found.verdict == words and words in COMPARISON_WORDS
    assert found.delta == pytest.approx(b.speedup / a.speedup - 1)
    assert (found.id, found.a_verdict, found.b_verdict) == ("standard", "PASS", "PASS")


def test_without_both_intervals_there_is_no_verdict() -> None:
    one = score(1.0, 0.9, 1.1)
    for a, b in ((one, None), (None, one), (None, None)):
        found = compare_scores("summary", a, b)
        assert found.verdict == "" and found.delta is None
