"""The correctness rule, shared by the judge and the candidate harness's in-process checks.

Element rule (scaled by the reference's RMS): an element fails only if
|err| > atol * RMS(ref) AND |err| / (|ref| + 1e-8) > rtol; plus RMS(err)/RMS(ref) < rms_tol.
Outputs must be plain, dense, contiguous tensors of the right shape, dtype and device, all finite.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    rms: float


def layout_problem(name: str, out: object, shape: tuple[int, ...], dtype: torch.dtype, device: str) -> str | None:
    """Why ``out`` is not an acceptable output tensor, or None."""
    if not isinstance(out, torch.Tensor) or type(out) is not torch.Tensor:  # a plain tensor, no subclass
        return f"{name}: not a plain torch.Tensor ({type(out).__name__})"
    if tuple(out.shape) != tuple(shape):
        return f"{name}: shape {tuple(out.shape)}, expected {tuple(shape)}"
    if out.dtype != dtype:
        return f"{name}: dtype {out.dtype}, expected {dtype}"
    if out.device.type != torch.device(device).type:
        return f"{name}: on {out.device}, expected {device}"
    if not out.is_contiguous() or out.layout != torch.strided:
        return f"{name}: not dense and contiguous"
    return None


def compare(name: str, out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> tuple[str | None, dict[str, float]]:
    """(first failure reason or None, error statistics)."""
    o = out.detach().to(torch.float64)
    r = ref.detach().to(o.device, torch.float64)
    finite = torch.isfinite(o)
    if not bool(finite.all()):
        bad = int((~finite).sum())
        return f"{name}: {bad} non-finite elements (NaN/inf; outputs are NaN-poisoned before each call)", {}
    err = (o - r).abs()
    rms_ref = float(r.pow(2).mean().sqrt()) or 1e-30
    rms_err = float((o - r).pow(2).mean().sqrt())
    fails = (err > tol.atol * rms_ref) & (err / (r.abs() + 1e-8) > tol.rtol)
    n_fail = int(fails.sum())
    stats = {"max_abs_err": float(err.max()) if err.numel() else 0.0, "rms_ratio": rms_err / rms_ref,
             "failed_elements": n_fail}
    if n_fail:
        idx = tuple(int(i) for i in torch.nonzero(fails)[0])
        return (f"{name}: {n_fail} elements out of tolerance; first at {list(idx)}: got {float(o[idx]):.6g}, "
                f"expected {float(r[idx]):.6g}"), stats
    if rms_err / rms_ref >= tol.rms:
        return f"{name}: RMS error ratio {rms_err / rms_ref:.4g} >= {tol.rms}", stats
    return None, stats
