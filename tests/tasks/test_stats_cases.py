"""Timing statistics (tasks.harness.stats) and the server's case builder (tasks.cases): pure, no Docker."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from kcoral.tasks import cases as case_builder
from kcoral.tasks.harness.schema import Phase, TimingMethod
from kcoral.tasks.harness.stats import estimate, geomean, geomean_ci, median, median_interval
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


def test_the_estimate_brackets_the_point_and_is_ordered() -> None:
    rng = random.Random(1)
    null = [0.2 + rng.gauss(0, 0.01) for _ in range(60)]
    base = [2.0 + rng.gauss(0, 0.05) + n for n in null]
    cand = [1.0 + rng.gauss(0, 0.05) + n for n in null]
    result = estimate(base, cand, null)
    assert result.basis == "net" and result.blocks == 30 and result.disturbed == 0
    net_base, net_cand = (
        [b - n for b, n in zip(base, null, strict=True)],
        [c - n for c, n in zip(cand, null, strict=True)],
    )
    assert result.speedup == pytest.approx(median(net_base) / median(net_cand), rel=0.03)
    assert result.lo < result.speedup < result.hi and result.lo > 1.8 and result.hi < 2.2


def test_a_candidate_too_fast_to_time_gives_an_interval_that_cannot_be_scored() -> None:
    # the candidate's call no longer than the protocol's cost (a small one) in every other iteration
    result = estimate([3.0] * 12, [3.0, 0.1] * 6, [0.2] * 12)  # 6 blocks: enough for an interval
    assert result.basis == "net" and math.isinf(result.hi) and result.lo <= result.speedup
    assert math.isinf(result.relative_half_width)


def test_geomean() -> None:
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean_ci([(2.0, 1.0, 3.0), (8.0, 4.0, 12.0)]) == pytest.approx((4.0, 2.0, 6.0))
    assert math.isnan(geomean([]))


def build(nonce: bytes, key: bytes = b"k" * 32) -> case_builder.CaseFile:
    return case_builder.build_cases(SOFTMAX, SOFTMAX.module(), key, nonce, TimingMethod())


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
