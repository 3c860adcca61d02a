"""CPU checks of the KDA task definition (tasks/kda/*) at tiny sizes: inputs, the fp64 oracle, holdout.

Needs torch (not fla). Runs inside the CPU job image without pytest:
    docker run --rm -v /work/main:/w -w /w --user 65534 -e HOME=/tmp --tmpfs /tmp kcoral-job:cpu \
        python3 tests/tasks/test_kda_cpu.py
and under pytest on a host, where it is skipped when torch is missing.
"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

try:
    import pytest
except ImportError:  # the CPU job image has no pytest
    pytest = None
if pytest is not None:
    pytest.importorskip("torch")

import torch  # noqa: E402

from kcoral.tasks.harness import checks  # noqa: E402
from kcoral.tasks.harness.taskdef import load_task  # noqa: E402

MAIN = load_task(ROOT / "tasks" / "kda" / "forward_b1_t8192_h96")
SMALL = load_task(ROOT / "tasks" / "kda" / "forward_b1_t512_h8")
mod = MAIN.module()
TINY = {"B": 1, "T": 64, "H": 2}
REGIMES = ["standard", "saturated", "strong", "mixed_depth", "switch", "boundary", "correlated", "random_depth"]
TENSORS = ["q", "k", "v", "g", "beta", "A_log", "dt_bias", "initial_state"]


def tolerance(task, workload_id: str) -> checks.Tolerance:
    w = next(w for w in task.manifest["workloads"] if w["id"] == workload_id)
    return checks.Tolerance(**w.get("tolerance", task.manifest["tolerance"]))


def holdout_recipes(shape: dict[str, int]) -> list[dict]:
    """One probe per (distribution, depth mode), with repeated keys and unaligned bands."""
    return [
        {
            **shape,
            "regime": "holdout",
            "dist": d,
            "depth": m,
            "loc": 0.3,
            "spread": 0.7,
            "beta_loc": 0.5,
            "depth_frac": 0.4,
            "band": 20,
            "repeat_frac": 0.25,
        }
        for d in mod.DISTRIBUTIONS
        for m in mod.DEPTH_MODES
    ]


def naive(inputs: dict, truncate_log_decay: float | None = None) -> dict[str, torch.Tensor]:
    """An independent reading of the spec: one (sequence, head) at a time, state kept V-first [V, K]."""
    B, T, H = inputs["B"], inputs["T"], inputs["H"]
    f = torch.float64
    out = torch.zeros(B, T, H, 128, dtype=f)
    final = torch.zeros(B, H, 128, 128, dtype=f)
    for b in range(B):
        for h in range(H):
            S = inputs["initial_state"][b, h].to(f).clone()  # [V, K]
            a = math.exp(float(inputs["A_log"][h]))
            bias = inputs["dt_bias"][h * 128 : (h + 1) * 128].to(f)
            for t in range(T):
                q = inputs["q"][b, t, h].to(f)
                k = inputs["k"][b, t, h].to(f)
                q = q / math.sqrt(float(q @ q) + 1e-6)
                k = k / math.sqrt(float(k @ k) + 1e-6)
                log_decay = -5.0 / (1.0 + torch.exp(-a * (inputs["g"][b, t, h].to(f) + bias)))
                if truncate_log_decay is not None:
                    log_decay = log_decay.clamp_min(truncate_log_decay)
                beta = 1.0 / (1.0 + math.exp(-float(inputs["beta"][b, t, h])))
                S = S * torch.exp(log_decay)[None, :]
                r = inputs["v"][b, t, h].to(f) - S @ k
                S = S + beta * torch.outer(r, k)
                out[b, t, h] = inputs["scale"] * (S @ q)
            final[b, h] = S
    return {"output": out, "final_state": final}


def test_inputs_deterministic_per_seed():
    for params in [{**TINY, "regime": r} for r in REGIMES] + holdout_recipes(TINY)[:5]:
        a, b, c = (mod.make_inputs(params, s, "cpu") for s in (7, 7, 8))
        for name in TENSORS:
            assert torch.equal(a[name], b[name]), (params, name)
        assert not torch.equal(a["v"], c["v"]), params
        assert not torch.equal(a["initial_state"], c["initial_state"]), params
    big = mod.make_inputs({**TINY, "regime": "standard"}, 2**64 - 1, "cpu")  # HMAC-sized seeds are accepted
    assert torch.isfinite(big["q"].float()).all()


def test_every_regime_has_the_right_shapes_dtypes_and_finite_values():
    B, T, H = TINY["B"], TINY["T"], TINY["H"]
    want = {
        "q": ((B, T, H, 128), torch.bfloat16),
        "k": ((B, T, H, 128), torch.bfloat16),
        "v": ((B, T, H, 128), torch.bfloat16),
        "g": ((B, T, H, 128), torch.bfloat16),
        "beta": ((B, T, H), torch.bfloat16),
        "A_log": ((H,), torch.float32),
        "dt_bias": ((H * 128,), torch.float32),
        "initial_state": ((B, H, 128, 128), torch.float32),
    }
    for params in [{**TINY, "regime": r} for r in REGIMES] + holdout_recipes(TINY):
        x = mod.make_inputs(params, 3, "cpu")
        for name, (shape, dtype) in want.items():
            t = x[name]
            assert tuple(t.shape) == shape and t.dtype == dtype and t.is_contiguous(), (params, name, t.shape)
            assert torch.isfinite(t.float()).all(), (params, name)
        assert (x["B"], x["T"], x["H"]) == (B, T, H) and x["scale"] == 128**-0.5
        outs = mod.make_outputs(x, "cpu")
        for name, (shape, dtype) in mod.output_specs(x).items():
            assert outs[name].shape == shape and outs[name].dtype == getattr(torch, dtype)


def log_decay(x: dict) -> torch.Tensor:
    H = x["H"]
    z = torch.exp(x["A_log"]).view(H, 1) * (x["g"].float() + x["dt_bias"].view(H, 128))
    return -5.0 * torch.sigmoid(z)


def test_regimes_do_what_they_say():
    p = dict(TINY, T=512)
    std = log_decay(mod.make_inputs({**p, "regime": "standard"}, 1, "cpu"))
    assert std.mean() > -0.5, "standard decays are mild"
    assert (log_decay(mod.make_inputs({**p, "regime": "saturated"}, 1, "cpu")) < -4.99).all()
    assert (
        log_decay(mod.make_inputs({**p, "regime": "boundary"}, 1, "cpu")) - (-5 / (1 + math.exp(0.5)))
    ).abs().max() < 1e-6
    mixed = log_decay(mod.make_inputs({**p, "regime": "mixed_depth"}, 1, "cpu"))
    saturated_pairs = (mixed < -4.99).all(dim=1)[0]  # [H, K]
    assert int(saturated_pairs.sum()) == p["H"] * 64
    sw = log_decay(mod.make_inputs({**p, "regime": "switch"}, 1, "cpu"))
    band = (torch.arange(512) // 128) % 2 == 1
    assert (sw[:, band] < -4.5).all() and (sw[:, ~band] > -2.5).all()
    c = mod.make_inputs({**p, "regime": "correlated"}, 1, "cpu")
    e0 = torch.zeros(128, dtype=torch.bfloat16)
    e0[0] = 1
    assert torch.equal(c["q"], c["k"]) and (c["q"] == e0).all() and (c["beta"] == 3).all()
    assert (log_decay(c) > -0.03).all(), "correlated rows barely decay"


def test_holdout_repeated_keys():
    x = mod.make_inputs({**holdout_recipes(dict(TINY, T=512))[0], "repeat_frac": 0.5}, 5, "cpu")
    k = x["k"][0, :, 0]  # [T, K]
    repeats = sum(bool((k[:t] == k[t]).all(dim=1).any()) for t in range(1, 512))
    assert 0.4 * 511 < repeats < 0.6 * 511, repeats
    y = mod.make_inputs({**holdout_recipes(dict(TINY, T=512))[0], "repeat_frac": 0.0}, 5, "cpu")
    k = y["k"][0, :, 0]
    assert sum(bool((k[:t] == k[t]).all(dim=1).any()) for t in range(1, 512)) == 0


def test_oracle_matches_naive_loop():
    for params in [
        {**TINY, "regime": r} for r in ("standard", "saturated", "switch", "correlated", "random_depth")
    ] + holdout_recipes(TINY)[::4]:
        x = mod.make_inputs(params, 11, "cpu")
        got, want = mod.oracle(x), naive(x)
        assert got["output"].dtype == torch.float32 and got["final_state"].shape == (1, 2, 128, 128)
        for name in ("output", "final_state"):
            err = (got[name].double() - want[name]).abs().max() / want[name].abs().max()
            assert err < 1e-6, (params, name, float(err))  # fp32 storage of an fp64 result
        ref = mod.reference(x, {**params, "exact": True})
        assert torch.equal(ref["output"], got["output"])


def test_sibling_task_is_the_same_definition():
    small = SMALL.module()
    a, b = (
        small.make_inputs({**TINY, "regime": "switch"}, 4, "cpu"),
        mod.make_inputs({**TINY, "regime": "switch"}, 4, "cpu"),
    )
    assert all(torch.equal(a[n], b[n]) for n in TENSORS)
    assert small.holdout_params(random.Random(1), 5)[0]["T"] == 512
    assert mod.holdout_params(random.Random(1), 5)[0]["T"] == 8192


def test_every_task_signature_is_what_its_inputs_are():
    """signature(params) (what `kcoral tasks show` prints, computed without torch) against the data a
    worker really gets: every tensor's shape and dtype, every scalar, every output spec. KDA at tiny
    sizes in every regime (the formulas are the same at any size); softmax at its real workloads."""
    softmax = load_task(ROOT / "tasks" / "demo" / "softmax")
    cases = [(mod, {**TINY, "regime": r}) for r in REGIMES] + [(SMALL.module(), {**TINY, "regime": "standard"})]
    cases += [(softmax.module(), w["params"]) for w in softmax.manifest["workloads"]]
    for task_mod, params in cases:
        sig, x = task_mod.signature(params), task_mod.make_inputs(params, 3, "cpu")
        tensors = {k: v for k, v in x.items() if isinstance(v, torch.Tensor)}
        assert set(tensors) == set(sig["inputs"]), (params, set(tensors))
        for name, (shape, dtype) in sig["inputs"].items():
            assert tuple(tensors[name].shape) == tuple(shape) and tensors[name].dtype == getattr(torch, dtype), name
        assert {k: v for k, v in x.items() if k not in tensors} == sig["scalars"], params
        assert task_mod.output_specs(x) == sig["outputs"], params


def test_holdout_params_vary_with_the_secret():
    draws = [mod.holdout_params(random.Random(s), 5) for s in range(20)]
    assert draws[0] == mod.holdout_params(random.Random(0), 5)
    assert len({json.dumps(d, sort_keys=True) for d in draws}) == 20
    assert len({tuple(p["depth"] for p in d) for d in draws}) > 5
    for d in draws:
        assert {p["depth"] for p in d} == set(mod.DEPTH_MODES)
        assert {p["dist"] for p in d} == set(mod.DISTRIBUTIONS)
        assert all((p["B"], p["T"], p["H"], p["regime"]) == (1, 8192, 96, "holdout") for p in d)


def test_tolerances_separate_good_and_bad_answers():
    """With the manifest's tolerances: the oracle rounded to bf16 passes; the 'truncate log decay at -2'
    shortcut (tests/tasks/kda_candidates/standard_only) passes standard but fails the deep-decay rows
    and the 'all' / 'random' holdout depth modes; 5% RMS noise fails."""
    shape = {"B": 1, "T": 256, "H": 2}
    verdicts = {}
    for regime in ("standard", "boundary", "correlated", "saturated", "strong", "mixed_depth", "switch"):
        x = mod.make_inputs({**shape, "regime": regime}, 21, "cpu")
        exact = mod.oracle(x)
        tol = tolerance(MAIN, regime)
        for name in ("output", "final_state"):
            rounded = exact[name].to(torch.bfloat16) if name == "output" else exact[name]
            assert checks.compare(name, rounded, exact[name], tol)[0] is None, (regime, name)
        short = naive(x, truncate_log_decay=-2.0)
        verdicts[regime] = [checks.compare(n, short[n], exact[n], tol)[0] for n in ("output", "final_state")]
    for regime in ("standard", "boundary", "correlated"):
        assert verdicts[regime] == [None, None], (regime, verdicts[regime])
    for regime in ("saturated", "strong", "switch"):  # mixed_depth does not catch this one (RMS ratio ~1.5%)
        assert any(verdicts[regime]), regime
    for depth in ("all", "random"):  # every 5-probe holdout draw holds both depth modes
        recipe = next(r for r in holdout_recipes(shape) if r["depth"] == depth)
        x = mod.make_inputs(recipe, 21, "cpu")
        exact, short = mod.oracle(x), naive(x, truncate_log_decay=-2.0)
        assert checks.compare("output", short["output"], exact["output"], tolerance(MAIN, "standard"))[0], depth
    exact = mod.oracle(mod.make_inputs({**shape, "regime": "standard"}, 21, "cpu"))["output"]
    noise = torch.randn(exact.shape, generator=torch.Generator().manual_seed(0))
    noisy = exact + 0.05 * exact.pow(2).mean().sqrt() * noise
    assert "RMS error ratio" in checks.compare("output", noisy, exact, tolerance(MAIN, "standard"))[0]


if __name__ == "__main__":
    failed = 0
    for name, fn in list(globals().items()):
        if name.startswith("test_") and callable(fn):
            try:
                fn()
                print(f"PASS {name}")
            except Exception as exc:  # noqa: BLE001 - report every test, then exit non-zero
                failed += 1
                print(f"FAIL {name}: {type(exc).__name__}: {exc}")
    sys.exit(1 if failed else 0)
