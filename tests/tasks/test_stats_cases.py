"""Timing statistics (tasks.harness.stats) and the server's case builder (tasks.cases): pure, no Docker."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from kcoral.runner.limits import EvalTiming
from kcoral.tasks import cases as case_builder
from kcoral.tasks.harness.schema import Phase
from kcoral.tasks.harness.stats import geomean, geomean_ci, median, median_rse, speedup_ci
from kcoral.tasks.harness.taskdef import load_task

SOFTMAX = load_task(Path(__file__).resolve().parents[2] / "tasks" / "demo" / "softmax")


def test_median_rse_shrinks_with_stable_samples() -> None:
    rng = random.Random(0)
    noisy = [1 + rng.gauss(0, 0.2) for _ in range(50)]
    steady = [1 + rng.gauss(0, 0.001) for _ in range(50)]
    assert median_rse(steady) < 0.001 < median_rse(noisy)
    assert math.isinf(median_rse([1.0, 2.0]))


def test_speedup_interval_brackets_the_point_and_is_ordered() -> None:
    rng = random.Random(1)
    base = [2.0 + rng.gauss(0, 0.05) for _ in range(60)]
    cand = [1.0 + rng.gauss(0, 0.05) for _ in range(60)]
    s, lo, hi = speedup_ci(base, cand)
    assert s == pytest.approx(median(base) / median(cand))
    assert lo < s < hi and lo > 1.8 and hi < 2.2


def test_speedup_interval_survives_a_resample_with_no_positive_median() -> None:
    s, lo, hi = speedup_ci([1.0] * 5, [1.0, -1.0, 1.0, -1.0, 1.0], resamples=200)
    assert math.isinf(hi) and lo <= s


def test_geomean() -> None:
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean_ci([(2.0, 1.0, 3.0), (8.0, 4.0, 12.0)]) == pytest.approx((4.0, 2.0, 6.0))
    assert math.isnan(geomean([]))


def build(nonce: bytes, key: bytes = b"k" * 32) -> case_builder.CaseFile:
    return case_builder.build_cases(SOFTMAX, SOFTMAX.module(), key, nonce, EvalTiming())


def test_holdout_first_opaque_ids_and_secrets_per_request() -> None:
    a, b = build(b"n1" * 8), build(b"n2" * 8)
    phases = [c.phase for c in a.cases]
    holdout = SOFTMAX.manifest["holdout"]["count"]
    assert phases == [Phase.HOLDOUT] * holdout + [Phase.WORKLOAD] * len(SOFTMAX.manifest["workloads"])
    assert [c.id for c in a.cases] == [f"c{i:02d}" for i in range(len(a.cases))]
    assert a.sample_key != b.sample_key and len(bytes.fromhex(a.sample_key)) == 32
    assert [c.seed for c in a.cases[:holdout]] != [c.seed for c in b.cases[:holdout]]
    assert [c.params for c in a.cases[:holdout]] != [c.params for c in b.cases[:holdout]]
    # the workloads' check inputs are the same in every request (results compare across requests)
    assert [c.seed for c in a.cases[holdout:]] == [c.seed for c in b.cases[holdout:]]
    assert [c.workload for c in a.cases if c.timed] == ["standard"]


def test_another_server_key_gives_other_holdouts() -> None:
    a, b = build(b"n" * 16), build(b"n" * 16, key=b"q" * 32)
    assert a.sample_key != b.sample_key and a.cases[0].seed != b.cases[0].seed


def test_seed_hashes_do_not_reveal_seeds() -> None:
    doc = build(b"n" * 16)
    hashes = case_builder.seed_hashes(doc)
    assert set(hashes) == {c.id for c in doc.cases}
    assert all(str(c.seed) not in hashes[c.id] for c in doc.cases)
