"""Timing statistics (tasks.harness.stats) and the server's case builder (tasks.cases): pure, no Docker."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from kcoral.runner.limits import EvalTiming
from kcoral.tasks import cases as case_builder
from kcoral.tasks.harness.schema import Phase
from kcoral.tasks.harness.stats import geomean, geomean_ci, median, median_interval, speedup_interval
from kcoral.tasks.harness.taskdef import load_task

SOFTMAX = load_task(Path(__file__).resolve().parents[2] / "tasks" / "demo" / "softmax")


def test_the_interval_narrows_with_steadier_samples() -> None:
    rng = random.Random(0)
    noisy = [1 + rng.gauss(0, 0.2) for _ in range(50)]
    steady = [1 + rng.gauss(0, 0.001) for _ in range(50)]
    width = {
        name: hi - lo
        for name, (_, lo, hi) in {"noisy": median_interval(noisy), "steady": median_interval(steady)}.items()
    }
    assert width["steady"] < 0.002 < 0.05 < width["noisy"]


def test_speedup_interval_brackets_the_point_and_is_ordered() -> None:
    rng = random.Random(1)
    base = [2.0 + rng.gauss(0, 0.05) for _ in range(60)]
    cand = [1.0 + rng.gauss(0, 0.05) for _ in range(60)]
    estimate = speedup_interval(base, cand)
    assert estimate.speedup == pytest.approx(median(base) / median(cand), rel=0.03)
    assert estimate.lo < estimate.speedup < estimate.hi and estimate.lo > 1.8 and estimate.hi < 2.2


def test_a_candidate_too_fast_to_time_gives_an_interval_that_cannot_be_scored() -> None:
    estimate = speedup_interval([1.0] * 6, [1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    assert math.isinf(estimate.hi) and estimate.lo <= estimate.speedup
    assert math.isinf(estimate.relative_half_width)


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
