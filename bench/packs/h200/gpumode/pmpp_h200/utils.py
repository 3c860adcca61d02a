"""Helpers shared by this pack's problems (one folder up from each, as GPU MODE's reference-kernels lays out)."""

import torch


def verbose_allclose(received: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float, max_print: int = 5):
    """The mismatches of ``received`` against ``expected`` (|a - b| > atol + rtol * |b|, or a NaN or inf where
    the other has none), as printable lines; [] when they match."""
    if received.shape != expected.shape:
        return [f"shape {list(received.shape)}, expected {list(expected.shape)}"]
    if received.dtype != expected.dtype:
        return [f"dtype {received.dtype}, expected {expected.dtype}"]
    got = received.double()
    want = expected.double()
    diff = (got - want).abs()
    bad = (diff > atol + rtol * want.abs()) | (torch.isfinite(got) != torch.isfinite(want))
    count = int(bad.sum().item())
    if not count:
        return []
    lines = [f"{count} of {received.numel()} elements differ (rtol {rtol:g}, atol {atol:g})"]
    for index in torch.nonzero(bad)[:max_print].tolist():
        where = tuple(index)
        lines.append(f"at {where}: got {got[where].item():.6g}, expected {want[where].item():.6g}")
    return lines


def match_reference(data, output, reference, rtol: float = 1e-5, atol: float = 1e-8):
    """(passed, message): ``output`` against ``reference(data)`` (on a copy: the reference may write into data)."""
    expected = reference(data)
    reasons = verbose_allclose(output, expected, rtol=rtol, atol=atol)
    return (False, "mismatch: " + "; ".join(reasons)) if reasons else (True, "")


def make_match_reference(reference, rtol: float = 1e-5, atol: float = 1e-8):
    """check_implementation(data, output) comparing against ``reference`` within the tolerances."""

    def check_implementation(data, output):
        return match_reference(data, output, reference, rtol=rtol, atol=atol)

    return check_implementation
