"""kda/forward_b1_t8192_h96: Kimi Delta Attention forward, bf16, K = V = 128 (spec: notes/official-eval.md).

Per head, per token (the formulas the fp64 oracle below follows literally):
    q^ = q / sqrt(sum q^2 + 1e-6);  k^ = k / sqrt(sum k^2 + 1e-6)
    log_decay[c] = -5 * sigmoid(exp(A_log[h]) * (g[c] + dt_bias[h*128 + c]))
    b = sigmoid(beta)
    S <- diag(exp(log_decay)) S;  r = v - S^T k^;  S <- S + b k^ r^T;  o = scale * S^T q^
S is [K, V] in the maths; ``initial_state`` and ``final_state`` are stored V-first ([V, K]).

Input regimes (``params["regime"]``), all drawn from one seeded generator on the target device:
    standard      q,k,v,g,beta ~ 0.5 N(0,1); A_log = log U[1,16]; dt = exp(U[log 1e-3, log 0.1]) >= 1e-4,
                  dt_bias = inverse_softplus(dt); initial_state ~ 0.25 N(0,1)
    saturated     A_log = log 16, dt_bias = 0, g = 3               (every decay at the -5 floor)
    strong        A_log = 0, dt_bias = 0                            (log decay ~ -2.5 everywhere)
    mixed_depth   half the (head, channel) pairs: dt_bias = 0, g = 10 (saturated); the rest standard
    switch        odd 128-token bands: g = 10 (decay switches between ~0 and the floor)
    boundary      A_log = 0, dt_bias = 0, g = -0.5                  (constant log decay -1.89)
    correlated    q = k = e0 (one-hot channel 0), beta logits 3, g = -3 (almost no decay)
    random_depth  A_log, dt_bias, g, beta ~ N(0,1)
    holdout       recipe drawn by ``holdout_params``: distribution, location/spread, depth mode,
                  repeated keys (see ``_holdout_inputs``)
``params["exact"]`` makes the reference the fp64 token-by-token recurrence instead of FLA.

torch (and fla) are imported inside functions only: the server imports this file without torch
to draw holdout parameters.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

K = 128
LOWER_BOUND = -5.0
SCALE = K**-0.5
BW_BYTES_PER_S = 4.8e12  # H200 HBM3e peak

REGIMES = (
    "standard",
    "saturated",
    "strong",
    "mixed_depth",
    "switch",
    "boundary",
    "correlated",
    "random_depth",
    "holdout",
)
DISTRIBUTIONS = ("normal", "uniform", "rademacher", "laplace")
DEPTH_MODES = ("none", "channels", "bands", "all", "random")
BAND_WIDTHS = (32, 64, 100, 128, 200, 256)
REPEAT_FRACTIONS = (0.0, 0.1, 0.25, 0.5)


# ---------------------------------------------------------------------------------------------- sizes


def floor_bytes(B: int, T: int, H: int) -> int:
    """Bytes a kernel must move at least: read q,k,v,g (bf16), beta (bf16), A_log, dt_bias, h0 (fp32);
    write output (bf16) and final_state (fp32)."""
    n = B * T * H * K
    read = 4 * n * 2 + B * T * H * 2 + H * 4 + H * K * 4 + B * H * K * K * 4
    written = n * 2 + B * H * K * K * 4
    return read + written


def floor_ms(B: int, T: int, H: int) -> float:
    return floor_bytes(B, T, H) / BW_BYTES_PER_S * 1e3


def _shape(params: dict[str, Any]) -> tuple[int, int, int]:
    return int(params["B"]), int(params["T"]), int(params["H"])


# --------------------------------------------------------------------------------------------- inputs


def make_inputs(params: dict[str, Any], seed: int, device: str) -> dict[str, Any]:
    """Deterministic for (params, seed, device): one generator on ``device``, tensors made there."""
    import torch

    B, T, H = _shape(params)
    regime = params.get("regime", "standard")
    if regime not in REGIMES:
        raise ValueError(f"unknown KDA regime {regime!r}")
    gen = torch.Generator(device=device).manual_seed(int(seed) & 0xFFFF_FFFF_FFFF_FFFF)
    f32 = torch.float32

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=gen, device=device, dtype=f32)

    def rand(*shape: int) -> torch.Tensor:
        return torch.rand(shape, generator=gen, device=device, dtype=f32)

    # The standard draws come first for every regime, so each regime is a set of overrides.
    q, k, v, g = (randn(B, T, H, K) * 0.5 for _ in range(4))
    beta = randn(B, T, H) * 0.5
    A_log = torch.log(1.0 + 15.0 * rand(H))
    lo, hi = math.log(1e-3), math.log(0.1)
    dt = torch.exp(lo + (hi - lo) * rand(H * K)).clamp_min(1e-4)
    dt_bias = dt + torch.log(-torch.expm1(-dt))  # inverse softplus
    h0 = randn(B, H, K, K) * 0.25

    if regime == "saturated":
        A_log.fill_(math.log(16.0))
        dt_bias.zero_()
        g.fill_(3.0)
    elif regime == "strong":
        A_log.zero_()
        dt_bias.zero_()
    elif regime == "mixed_depth":
        pairs = torch.randperm(H * K, generator=gen, device=device)[: (H * K) // 2]
        mask = torch.zeros(H * K, dtype=torch.bool, device=device)
        mask[pairs] = True
        dt_bias[mask] = 0.0
        g[:, :, mask.view(H, K)] = 10.0
    elif regime == "switch":
        g[:, (torch.arange(T, device=device) // 128) % 2 == 1] = 10.0
    elif regime == "boundary":
        A_log.zero_()
        dt_bias.zero_()
        g.fill_(-0.5)
    elif regime == "correlated":
        q.zero_()
        q[..., 0] = 1.0
        k = q.clone()
        beta.fill_(3.0)
        g.fill_(-3.0)
    elif regime == "random_depth":
        A_log, dt_bias, g, beta = randn(H), randn(H * K), randn(B, T, H, K), randn(B, T, H)
    elif regime == "holdout":
        q, k, v, g, beta, A_log, dt_bias, h0 = _holdout_inputs(params, gen, device, B, T, H)

    bf16 = torch.bfloat16
    return {
        "q": q.to(bf16).contiguous(),
        "k": k.to(bf16).contiguous(),
        "v": v.to(bf16).contiguous(),
        "g": g.to(bf16).contiguous(),
        "beta": beta.to(bf16).contiguous(),
        "A_log": A_log.to(f32).contiguous(),
        "dt_bias": dt_bias.to(f32).contiguous(),
        "initial_state": h0.to(f32).contiguous(),
        "B": B,
        "T": T,
        "H": H,
        "scale": SCALE,
    }


def _sample(dist: str, shape: tuple[int, ...], gen: Any, device: str) -> Any:
    """Zero-mean, unit-variance draws from ``dist``."""
    import torch

    if dist == "normal":
        return torch.randn(shape, generator=gen, device=device)
    if dist == "uniform":
        return (torch.rand(shape, generator=gen, device=device) * 2.0 - 1.0) * math.sqrt(3.0)
    if dist == "rademacher":
        return torch.randint(0, 2, shape, generator=gen, device=device).float() * 2.0 - 1.0
    if dist == "laplace":  # difference of two Exp(1) draws has variance 2
        e = torch.empty((2, *shape), device=device).exponential_(generator=gen)
        return (e[0] - e[1]) / math.sqrt(2.0)
    raise ValueError(f"unknown distribution {dist!r}")


def _holdout_inputs(params: dict[str, Any], gen: Any, device: str, B: int, T: int, H: int) -> tuple[Any, ...]:
    """Holdout recipe. q, k, v = loc + spread * X with X from ``dist`` (unit variance); beta logits =
    beta_loc + 0.5 X; initial_state ~ 0.25 spread N(0,1). Depth mode sets the gate:
        none      standard A_log / dt_bias, g = 0.5 X
        channels  a ``depth_frac`` share of (head, channel) pairs saturated (dt_bias = 0, g = 10)
        bands     alternating bands of ``band`` tokens, odd bands g = 10
        all       A_log = log 16, dt_bias = 0, g = 3 + 0.5 X (every decay at the floor)
        random    A_log, dt_bias ~ N(0,1); g = X
    ``repeat_frac``: that share of tokens (per sequence and head) reuses the key of an earlier token."""
    import torch

    dist, loc, spread = params["dist"], float(params["loc"]), float(params["spread"])
    depth = params["depth"]
    q, k, v = (loc + spread * _sample(dist, (B, T, H, K), gen, device) for _ in range(3))
    g = 0.5 * _sample(dist, (B, T, H, K), gen, device)
    beta = float(params.get("beta_loc", 0.0)) + 0.5 * _sample(dist, (B, T, H), gen, device)
    u = torch.rand(H + H * K, generator=gen, device=device)
    A_log = torch.log(1.0 + 15.0 * u[:H])
    lo, hi = math.log(1e-3), math.log(0.1)
    dt = torch.exp(lo + (hi - lo) * u[H:]).clamp_min(1e-4)
    dt_bias = dt + torch.log(-torch.expm1(-dt))
    h0 = 0.25 * spread * torch.randn((B, H, K, K), generator=gen, device=device)

    if depth == "channels":
        mask = torch.rand(H * K, generator=gen, device=device) < float(params.get("depth_frac", 0.5))
        dt_bias[mask] = 0.0
        g[:, :, mask.view(H, K)] = 10.0
    elif depth == "bands":
        width = int(params.get("band", 128))
        g[:, (torch.arange(T, device=device) // width) % 2 == 1] = 10.0
    elif depth == "all":
        A_log.fill_(math.log(16.0))
        dt_bias.zero_()
        g += 3.0
    elif depth == "random":
        A_log = torch.randn(H, generator=gen, device=device)
        dt_bias = torch.randn(H * K, generator=gen, device=device)
        g = 2.0 * g
    elif depth != "none":
        raise ValueError(f"unknown depth mode {depth!r}")

    frac = float(params.get("repeat_frac", 0.0))
    if frac > 0.0 and T > 1:
        t = torch.arange(T, device=device).view(1, T, 1).expand(B, T, H)
        earlier = (torch.rand((B, T, H), generator=gen, device=device) * t).long()  # uniform in [0, t)
        repeat = (torch.rand((B, T, H), generator=gen, device=device) < frac) & (t > 0)
        src = torch.where(repeat, earlier, t)
        for _ in range(max(1, math.ceil(math.log2(T))) + 1):  # pointer jumping: follow chains to an original
            src = torch.gather(src, 1, src)
        k = torch.gather(k, 1, src.unsqueeze(-1).expand(B, T, H, K))
    return q, k, v, g, beta, A_log, dt_bias, h0


# -------------------------------------------------------------------------------------------- outputs


def output_specs(inputs: dict[str, Any]) -> dict[str, tuple[tuple[int, ...], str]]:
    B, T, H = inputs["B"], inputs["T"], inputs["H"]
    return {"output": ((B, T, H, K), "bfloat16"), "final_state": ((B, H, K, K), "float32")}


def signature(params: dict[str, Any]) -> dict[str, Any]:
    """What ``data`` holds for these params, without torch: tensors (shape, dtype), scalars, outputs."""
    B, T, H = _shape(params)
    bf16, f32 = "bfloat16", "float32"
    tokens = (B, T, H, K)
    return {
        "inputs": {
            **{name: (tokens, bf16) for name in ("q", "k", "v", "g")},
            "beta": ((B, T, H), bf16),
            "A_log": ((H,), f32),
            "dt_bias": ((H * K,), f32),
            "initial_state": ((B, H, K, K), f32),
        },
        "scalars": {"B": B, "T": T, "H": H, "scale": SCALE},
        "outputs": output_specs({"B": B, "T": T, "H": H}),
    }


def make_outputs(inputs: dict[str, Any], device: str) -> dict[str, Any]:
    import torch

    return {
        name: torch.empty(shape, dtype=getattr(torch, dtype), device=device)
        for name, (shape, dtype) in output_specs(inputs).items()
    }


# ------------------------------------------------------------------------------------ reference paths


def _fla(data: dict[str, Any]) -> tuple[Any, Any]:
    """The FLA call verified on the H200 host (fla-core 0.6.0)."""
    from fla.ops.kda import chunk_kda

    return chunk_kda(
        data["q"],
        data["k"],
        data["v"],
        data["g"],
        data["beta"],
        scale=data["scale"],
        initial_state=data["initial_state"],
        output_final_state=True,
        use_qk_l2norm_in_kernel=True,
        use_gate_in_kernel=True,
        use_beta_sigmoid_in_kernel=True,
        safe_gate=True,
        lower_bound=LOWER_BOUND,
        state_v_first=True,
        A_log=data["A_log"],
        dt_bias=data["dt_bias"],
    )


def oracle(inputs: dict[str, Any]) -> dict[str, Any]:
    """fp64 token-by-token recurrence, vectorised over batch and heads, on the inputs' device.
    State kept as [B, H, K, V], transposed to V-first at the end. Output returned in fp32 (unrounded)."""
    import torch

    f64 = torch.float64
    B, T, H = inputs["B"], inputs["T"], inputs["H"]
    q, k, v = (inputs[n].to(f64) for n in ("q", "k", "v"))
    q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
    k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    a = torch.exp(inputs["A_log"].to(f64)).view(H, 1)
    z = a * (inputs["g"].to(f64) + inputs["dt_bias"].to(f64).view(H, K))
    decay = torch.exp(LOWER_BOUND * torch.sigmoid(z)).unsqueeze(-1)  # [B, T, H, K, 1]
    b = torch.sigmoid(inputs["beta"].to(f64)).view(B, T, H, 1, 1)
    scale = float(inputs["scale"])
    S = inputs["initial_state"].to(f64).transpose(-1, -2).contiguous()  # [B, H, K, V]
    out = torch.empty((B, T, H, K), dtype=f64, device=S.device)
    for t in range(T):
        S.mul_(decay[:, t])
        kt = k[:, t]  # [B, H, K]
        r = v[:, t] - torch.einsum("bhkv,bhk->bhv", S, kt)
        S.add_(b[:, t] * kt.unsqueeze(-1) * r.unsqueeze(-2))
        out[:, t] = scale * torch.einsum("bhkv,bhk->bhv", S, q[:, t])
    return {"output": out.to(torch.float32), "final_state": S.transpose(-1, -2).contiguous().to(torch.float32)}


def reference(inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    import torch

    if params.get("exact"):
        return oracle(inputs)
    with torch.no_grad():
        o, state = _fla(inputs)
    return {"output": o, "final_state": state}


def baseline(data: dict[str, Any]) -> Any:
    import torch

    out, final = data["output"], data["final_state"]

    def run() -> None:
        with torch.no_grad():
            o, state = _fla(data)
        out.copy_(o)
        final.copy_(state)

    return run


def candidate(module: Any, data: dict[str, Any]) -> Any:
    fn = module.setup(data, data["B"], data["T"], data["H"])
    if not callable(fn):
        raise TypeError(f"setup() returned {type(fn).__name__}, not a zero-argument callable")
    return fn


# ---------------------------------------------------------------------------------------------- holdout


def standard_shape(manifest_path: Path) -> dict[str, int]:
    """B, T, H of the manifest's standard workload (the shape every holdout probe uses)."""
    manifest = json.loads(Path(manifest_path).read_text())
    for w in manifest["workloads"]:
        if w["params"].get("regime", "standard") == "standard":
            return {n: int(w["params"][n]) for n in ("B", "T", "H")}
    raise ValueError(f"{manifest_path}: no standard workload")


def draw_holdout(rng: random.Random, count: int, shape: dict[str, int]) -> list[dict[str, Any]]:
    """``count`` probe recipes. Distributions and depth modes are dealt from shuffled decks, so any 5
    probes cover all five depth modes and every distribution at least once."""
    dists: list[str] = []
    depths: list[str] = []
    probes = []
    for _ in range(count):
        if not dists:
            dists = rng.sample(DISTRIBUTIONS, len(DISTRIBUTIONS))
        if not depths:
            depths = rng.sample(DEPTH_MODES, len(DEPTH_MODES))
        probes.append(
            {
                **shape,
                "regime": "holdout",
                "dist": dists.pop(),
                "depth": depths.pop(),
                "loc": round(rng.uniform(-0.5, 0.5), 4),
                "spread": round(math.exp(rng.uniform(math.log(0.25), math.log(2.0))), 4),
                "beta_loc": round(rng.uniform(-1.0, 2.0), 4),
                "depth_frac": round(rng.uniform(0.1, 0.9), 4),
                "band": rng.choice(BAND_WIDTHS),
                "repeat_frac": rng.choice(REPEAT_FRACTIONS),
            }
        )
    return probes


def holdout_params(rng: random.Random, count: int) -> list[dict[str, Any]]:
    return draw_holdout(rng, count, standard_shape(Path(__file__).with_name("manifest.json")))
