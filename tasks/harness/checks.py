"""The correctness rule the supervisor applies to every call's outputs.

Element rule (scaled by the reference's RMS): an element fails only if
|err| > atol * RMS(ref) AND |err| / (|ref| + 1e-8) > rtol; plus RMS(err)/RMS(ref) < rms_tol; every
element finite. The outputs are the supervisor's own buffers (dense, contiguous, of the task's shape,
dtype and device), so only their values are the candidate's.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    rms: float


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
    stats = {
        "max_abs_err": float(err.max()) if err.numel() else 0.0,
        "rms_ratio": rms_err / rms_ref,
        "failed_elements": n_fail,
    }
    if n_fail:
        idx = tuple(int(i) for i in torch.nonzero(fails)[0])
        return (
            f"{name}: {n_fail} elements out of tolerance; first at {list(idx)}: got {float(o[idx]):.6g}, "
            f"expected {float(r[idx]):.6g}"
        ), stats
    if rms_err / rms_ref >= tol.rms:
        return f"{name}: RMS error ratio {rms_err / rms_ref:.4g} >= {tol.rms}", stats
    return None, stats
