"""demo/softmax: y = softmax(x, dim=-1) for float32 x [rows, cols], on the CPU.

Inputs are drawn from the recipe's parameters: dist (normal | uniform | laplace | rademacher),
loc, scale, and neg_inf_fraction (that share of entries set to -inf, never a whole row).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

DISTRIBUTIONS = ("normal", "uniform", "laplace", "rademacher")


def make_inputs(params: dict[str, Any], seed: int, device: str) -> dict[str, Any]:
    import torch

    rows, cols = int(params["rows"]), int(params["cols"])
    gen = torch.Generator(device=device).manual_seed(seed)
    dist = params.get("dist", "normal")
    if dist == "uniform":
        x = torch.rand(rows, cols, generator=gen, device=device) * 2 - 1
    elif dist == "laplace":
        u = torch.rand(rows, cols, generator=gen, device=device).clamp(1e-7, 1 - 1e-7) - 0.5
        x = -u.sign() * torch.log1p(-2 * u.abs())
    elif dist == "rademacher":
        x = torch.randint(0, 2, (rows, cols), generator=gen, device=device).float() * 2 - 1
    else:
        x = torch.randn(rows, cols, generator=gen, device=device)
    x.mul_(float(params.get("scale", 1.0))).add_(float(params.get("loc", 0.0)))  # in place: one tensor per draw
    frac = float(params.get("neg_inf_fraction", 0.0))
    if frac > 0 and cols > 1:
        mask = torch.rand(rows, cols, generator=gen, device=device) < frac
        mask[:, 0] = False
        x = x.masked_fill(mask, float("-inf"))
    return {"x": x.contiguous(), "rows": rows, "cols": cols}


def make_outputs(inputs: dict[str, Any], device: str) -> dict[str, Any]:
    import torch

    return {"y": torch.empty(inputs["rows"], inputs["cols"], dtype=torch.float32, device=device)}


def output_specs(inputs: dict[str, Any]) -> dict[str, tuple[tuple[int, ...], str]]:
    return {"y": ((inputs["rows"], inputs["cols"]), "float32")}


def signature(params: dict[str, Any]) -> dict[str, Any]:
    """What ``data`` holds for these params, without torch: tensors (shape, dtype), scalars, outputs."""
    rows, cols = int(params["rows"]), int(params["cols"])
    return {
        "inputs": {"x": ((rows, cols), "float32")},
        "scalars": {"rows": rows, "cols": cols},
        "outputs": output_specs({"rows": rows, "cols": cols}),
    }


def reference(inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    import torch

    return {"y": torch.softmax(inputs["x"].to(torch.float64), dim=-1).to(torch.float32)}


def baseline(data: dict[str, Any]) -> Callable[[], None]:
    import torch

    x, y = data["x"], data["y"]

    def run() -> None:
        torch.softmax(x, dim=-1, out=y)

    return run


def candidate(module: Any, data: dict[str, Any]) -> Callable[[], None]:
    return module.setup(data)


def holdout_params(rng: random.Random, count: int) -> list[dict[str, Any]]:
    """Probes at the timed shape with distributions, locations and spreads drawn from the secret."""
    probes = []
    for _ in range(count):
        probe: dict[str, Any] = {
            "rows": 4096,
            "cols": 1024,
            "dist": rng.choice(DISTRIBUTIONS),
            "loc": rng.uniform(-50, 50),
            "scale": 10 ** rng.uniform(-3, 2.5),
        }
        if rng.random() < 0.4:
            probe["neg_inf_fraction"] = rng.uniform(0.05, 0.6)
        probes.append(probe)
    return probes
