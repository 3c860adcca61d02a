"""The correctness rule the supervisor applies to every call's outputs.

Element rule (scaled by the reference's RMS): an element fails only if
|err| > atol * RMS(ref) AND |err| / (|ref| + 1e-8) > rtol; plus RMS(err)/RMS(ref) < rms_tol; every
element finite. A problem pack's KernelBench task uses KernelBench's own rule instead (``allclose``):
an element fails if |err| > atol + rtol * |ref|. The outputs are the supervisor's own buffers (dense,
contiguous, of the task's shape, dtype and device), so only their values are the candidate's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Tolerance:
    atol: float = 0.0
    rtol: float = 0.0
    rms: float = math.inf
    #: non-zero: torch.allclose's rule (KernelBench's), not the RMS-scaled one
    allclose: float = 0.0


def compare(name: str, out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> tuple[str | None, dict[str, float]]:
    """(first failure reason or None, error statistics).

    The supervisor checks every timed sample this way, so the check's cost sets how many samples fit
    in a budget: in float32 when neither side is float64 (a bf16/fp16/fp32 value is exact in float32),
    with one full-size temporary (the error) and reductions that need no copy; float64 where float32
    could overflow. A mask of the failing elements is made only when the largest error is over atol.
    """
    wide = torch.float64 if torch.float64 in (out.dtype, ref.dtype) else torch.float32
    o = out.detach().to(dtype=wide)
    r = ref.detach().to(o.device, wide)
    err = o - r
    lo, hi = (float(v) for v in torch.aminmax(err)) if err.numel() else (0.0, 0.0)
    if not (math.isfinite(lo) and math.isfinite(hi)):  # NaN propagates into aminmax, as inf does
        found = _without_matched_non_finite(o, r)
        if isinstance(found, str):
            return f"{name}: {found}", {}
        o, r = found
        err = o - r
        lo, hi = (float(v) for v in torch.aminmax(err))
        if not (math.isfinite(lo) and math.isfinite(hi)):  # finite values whose difference overflows
            if wide is torch.float32:
                return compare(name, out.to(torch.float64), ref.to(torch.float64), tol)
            return f"{name}: its difference from the reference overflows float64", {}
    rms_ref = _rms(r) or 1e-30
    rms_err = _rms(err)
    max_abs = max(0.0, -lo, hi)  # 0.0 first: an exact match is 0, not -0
    # an element fails when it is off by more than atol * RMS(ref) AND by more than rtol relative to
    # its reference: the second test only where the first holds (none do when the largest error is under)
    n_fail = 0
    first: tuple[int, ...] | None = None
    if tol.allclose:
        return _allclose(name, o, r, err, tol, max_abs, rms_err / rms_ref)
    if max_abs > tol.atol * rms_ref:
        err.abs_()
        over = err > tol.atol * rms_ref
        where = torch.nonzero(over)
        off, expected = err[over].to(torch.float64), r[over].to(torch.float64)
        fails = off / (expected.abs() + 1e-8) > tol.rtol
        n_fail = int(fails.sum())
        if n_fail:
            first = tuple(int(i) for i in where[int(torch.nonzero(fails)[0])])
    stats = {"max_abs_err": max_abs, "rms_ratio": rms_err / rms_ref, "failed_elements": n_fail}
    if first is not None:
        got, want = float(o[first]), float(r[first])
        gap = abs(got - want)
        return (
            f"{name}: {n_fail} elements out of tolerance; first at {list(first)}: got {got:.6g}, expected {want:.6g} "
            f"(off by {gap:.3g} > atol {tol.atol:g} x RMS(ref) {rms_ref:.3g} = {tol.atol * rms_ref:.3g}, and by "
            f"{gap / (abs(want) + 1e-8):.3g} of it > rtol {tol.rtol:g}: both rules failed)"
        ), stats
    if rms_err / rms_ref >= tol.rms:
        return (
            f"{name}: RMS error ratio {rms_err / rms_ref:.4g} >= {tol.rms} (rule rms: RMS(out - ref) / RMS(ref))",
            stats,
        )
    return None, stats


def _allclose(
    name: str, o: torch.Tensor, r: torch.Tensor, err: torch.Tensor, tol: Tolerance, max_abs: float, rms_ratio: float
) -> tuple[str | None, dict[str, float]]:
    """torch.allclose's rule on ``err`` (= o - r, finite): an element fails if |err| > atol + rtol * |ref|."""
    fails = err.abs() > tol.atol + tol.rtol * r.abs()
    n_fail = int(fails.sum())
    stats = {"max_abs_err": max_abs, "rms_ratio": rms_ratio, "failed_elements": n_fail}
    if not n_fail:
        return None, stats
    first = tuple(int(i) for i in torch.nonzero(fails)[0])
    got, want = float(o[first]), float(r[first])
    return (
        f"{name}: {n_fail} elements out of tolerance; first at {list(first)}: got {got:.6g}, expected {want:.6g} "
        f"(off by {abs(got - want):.3g} > atol {tol.atol:g} + rtol {tol.rtol:g} x |expected|, torch.allclose's rule)"
    ), stats


def _without_matched_non_finite(o: torch.Tensor, r: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | str:
    """The output and reference with the reference's own NaN and infinities, matched by the output, set to 0
    on both sides (right there: equal_nan), or why not: any other non-finite element on either side."""
    same = (torch.isnan(o) & torch.isnan(r)) | (torch.isinf(r) & (o == r))
    odd = ~(torch.isfinite(o) & torch.isfinite(r)) & ~same
    bad = int(odd.sum())
    if bad:
        return f"{bad} non-finite elements {_non_finite(o, r, odd, bad)}"
    return (o.masked_fill(same, 0.0), r.masked_fill(same, 0.0)) if bool(same.any()) else (o, r)


def _non_finite(out: torch.Tensor, ref: torch.Tensor, odd: torch.Tensor, bad: int) -> str:
    """What the ``bad`` elements (``odd``) are, and the likely cause: where the reference is finite, NaN
    alone is what an element never written holds (outputs are NaN-poisoned before each call) and an
    infinity is a value that overflowed; elsewhere the output missed the reference's own NaN or inf."""
    missed = int((odd & ~torch.isfinite(ref)).sum())
    if missed:
        return f"({missed} where the reference is NaN or inf and the output is not the same)"
    nan = int((odd & torch.isnan(out)).sum())
    if nan == bad:
        return "(NaN: outputs are NaN-poisoned before each call, so elements never written stay NaN)"
    return f"({nan} NaN, {bad - nan} inf: a value overflowed its dtype, or was divided by zero)"


def _rms(t: torch.Tensor) -> float:
    """The root mean square, accumulated in the tensor's own dtype (no copy); in float64 when float32
    overflowed or underflowed to zero on a tensor that is not all zeros."""
    n = t.numel()
    if not n:
        return 0.0
    value = float(torch.linalg.vector_norm(t))
    if t.dtype is not torch.float64 and (not math.isfinite(value) or (value == 0.0 and bool(t.any()))):
        value = float(torch.linalg.vector_norm(t.to(torch.float64)))
    if not math.isfinite(value):  # the squares overflow even float64 (values near 1e300): scaled by the largest
        top = float(t.abs().max())
        return top * float(torch.linalg.vector_norm(t.to(torch.float64) / top)) / math.sqrt(n)
    return value / math.sqrt(n)
