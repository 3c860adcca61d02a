"""The KDA task manifests and the torch-free half of their task modules (what the server uses)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from kcoral.tasks.harness.taskdef import load_task

ROOT = Path(__file__).resolve().parents[2]
TASKS = {"kda/forward_b1_t8192_h96": (1, 8192, 96), "kda/forward_b1_t512_h8": (1, 512, 8)}
STRESS = ["saturated", "strong", "mixed_depth", "switch", "boundary", "correlated", "random_depth"]


@pytest.fixture(params=sorted(TASKS))
def task(request: pytest.FixtureRequest):
    return load_task(ROOT / "tasks" / request.param)


def test_manifest_rows(task) -> None:
    m = task.manifest
    B, T, H = TASKS[m["id"]]
    assert task.root.name == m["id"].split("/")[1] and m["device"] == "cuda"
    assert m["tolerance"] == {"atol": 0.5, "rtol": 0.05, "rms": 0.03} and m["holdout"] == {"count": 5}
    rows = {w["id"]: w for w in m["workloads"]}
    assert list(rows) == ["standard", *STRESS, "exact_random_depth", "exact_correlated"]
    assert [w["id"] for w in m["workloads"] if w["timed"]] == ["standard"]
    for w in m["workloads"]:
        p = w["params"]
        assert (p["B"], p["T"], p["H"]) == (B, T, H)
        assert p["regime"] == w["id"].removeprefix("exact_")
        assert p.get("exact", False) == w["id"].startswith("exact_")
        correlated = p["regime"] == "correlated"
        assert ("tolerance" in w) == correlated
        if correlated:
            assert w["tolerance"] == {"atol": 1.0, "rtol": 0.2, "rms": 0.15}


def test_floor_is_bytes_over_bandwidth(task) -> None:
    B, T, H = TASKS[task.manifest["id"]]
    n = B * T * H * 128
    moved = 5 * n * 2 + B * T * H * 2 + H * 4 + H * 128 * 4 + 2 * B * H * 128 * 128 * 4
    assert task.manifest["floor_ms"] == pytest.approx(moved / 4.8e12 * 1e3, rel=1e-5)
    assert str(moved) in task.manifest["description"]


def test_module_imports_and_draws_holdout_without_torch(task) -> None:
    code = (
        f"import sys, random; sys.modules['torch'] = None; sys.path.insert(0, {str(ROOT)!r})\n"
        "from pathlib import Path\nfrom kcoral.tasks.harness.taskdef import load_task\n"
        f"t = load_task(Path({str(task.root)!r}))\n"
        "import json; print(json.dumps(t.module().holdout_params(random.Random(3), 5)))"
    )
    done = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    probes = json.loads(done.stdout)
    B, T, H = TASKS[task.manifest["id"]]
    assert len(probes) == 5 and all((p["B"], p["T"], p["H"]) == (B, T, H) for p in probes)


def test_holdout_draws_depend_on_the_secret(task) -> None:
    mod = task.module()
    a, b, c = (
        mod.holdout_params(random.Random(1), 5),
        mod.holdout_params(random.Random(1), 5),
        mod.holdout_params(random.Random(2), 5),
    )
    assert a == b and a != c
    assert json.loads(json.dumps(a)) == a
    assert {p["depth"] for p in a} == {"none", "channels", "bands", "all", "random"}
    assert {p["dist"] for p in a} == {"normal", "uniform", "rademacher", "laplace"}
    assert len(mod.holdout_params(random.Random(1), 12)) == 12
