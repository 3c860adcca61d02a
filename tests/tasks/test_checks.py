"""The correctness rule (tasks.harness.checks.compare): both conditions of the element rule on both sides of
their thresholds, the RMS rule, non-finite outputs and the reported statistics. Needs torch (CPU is enough);
skipped when torch is missing."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from kcoral.tasks.harness.checks import Tolerance, compare  # noqa: E402

LOOSE_RMS = 1e9


def t(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def test_exact_output_passes_with_zero_statistics() -> None:
    ref = t(1.0, -2.0, 3.0)
    assert compare("y", ref.clone(), ref, Tolerance(0.0, 0.0, 1e-12)) == (
        None,
        {"max_abs_err": 0.0, "rms_ratio": 0.0, "failed_elements": 0},
    )


@pytest.mark.parametrize(
    ("bad", "cause"),
    [
        (float("nan"), "(NaN: outputs are NaN-poisoned before each call, so elements never written stay NaN)"),
        (float("inf"), "(0 NaN, 2 inf: a value overflowed its dtype, or was divided by zero)"),
        (float("-inf"), "(0 NaN, 2 inf: a value overflowed its dtype, or was divided by zero)"),
    ],
)
def test_non_finite_elements_are_counted_and_their_likely_cause_named(bad: float, cause: str) -> None:
    """The poisoning hint only where unwritten elements are the likely cause (NaN), not for an overflow."""
    out = t(1.0, bad, bad)
    assert compare("y", out, t(1.0, 2.0, 3.0), Tolerance(1.0, 1.0, LOOSE_RMS)) == (
        f"y: 2 non-finite elements {cause}",
        {},
    )


def test_nan_and_inf_together_are_told_apart() -> None:
    reason, _ = compare("y", t(float("nan"), float("inf"), 1.0), t(1.0, 2.0, 3.0), Tolerance(1.0, 1.0, LOOSE_RMS))
    assert reason == "y: 2 non-finite elements (1 NaN, 1 inf: a value overflowed its dtype, or was divided by zero)"


def test_the_references_own_nan_and_inf_matched_are_right_and_missed_are_named() -> None:
    """A reference with NaN or inf (a log of a negative number, a division by zero): an output with the same
    there passes on the rest, its statistics finite (a report's JSON holds no NaN); one that is finite
    there fails, its reason saying so, not "never written"."""
    nan, inf = float("nan"), float("inf")
    ref = t(nan, inf, -inf, 2.0)
    assert compare("y", t(nan, inf, -inf, 2.0), ref, Tolerance(1e-6, 1e-6, 1e-6)) == (
        None,
        {"max_abs_err": 0.0, "rms_ratio": 0.0, "failed_elements": 0},
    )
    reason, stats = compare("y", t(0.0, inf, 1.0, 2.0), ref, Tolerance(1.0, 1.0, LOOSE_RMS))
    assert reason == "y: 2 non-finite elements (2 where the reference is NaN or inf and the output is not the same)"
    assert stats == {}
    reason, _ = compare("y", t(nan, inf, -inf, 3.0), ref, Tolerance(1e-3, 1e-3, LOOSE_RMS))
    assert reason is not None and reason.startswith("y: 1 elements out of tolerance; first at [3]: got 3, expected 2")


def test_values_whose_squares_overflow_float64_give_finite_statistics() -> None:
    """A float64 output near 1e300 against a small reference: the RMS of the error overflows float64 unless
    scaled; its statistics stay finite numbers and the element fails."""
    reason, stats = compare("y", t(1e300, 1e300), t(1.0, 2.0), Tolerance(1e-3, 1e-3, LOOSE_RMS))
    assert reason is not None and reason.startswith("y: 2 elements out of tolerance")
    assert all(math.isfinite(v) for v in stats.values()) and stats["rms_ratio"] > 1e299, stats
    reason, stats = compare("y", t(1.7e308, -1.7e308), t(-1.7e308, 1.7e308), Tolerance(1e-3, 1e-3, LOOSE_RMS))
    assert reason == "y: its difference from the reference overflows float64" and stats == {}


def test_an_exact_match_reports_a_largest_error_of_zero_not_minus_zero() -> None:
    _, stats = compare("y", t(1.0, 2.0), t(1.0, 2.0), Tolerance(0.0, 0.0, 1e-12))
    assert math.copysign(1.0, stats["max_abs_err"]) == 1.0


def test_statistics_are_exact() -> None:
    # ref RMS = sqrt((9 + 16) / 2) = sqrt(12.5); errors 1 and 0: error RMS = sqrt(0.5); ratio = sqrt(0.04) = 0.2
    reason, stats = compare("y", t(4.0, 4.0), t(3.0, 4.0), Tolerance(1.0, 1.0, LOOSE_RMS))
    assert reason is None
    assert stats["max_abs_err"] == 1.0 and stats["rms_ratio"] == pytest.approx(0.2) and stats["failed_elements"] == 0


def test_absolute_threshold_is_scaled_by_the_reference_rms() -> None:
    # ref RMS 2 (every element 2 in magnitude); error 1 on the first element
    ref, out = t(2.0, -2.0, 2.0, -2.0), t(3.0, -2.0, 2.0, -2.0)
    assert compare("y", out, ref, Tolerance(0.5, 0.0, LOOSE_RMS))[0] is None  # 1 > 0.5 * 2 is false
    reason, stats = compare("y", out, ref, Tolerance(0.49, 0.0, LOOSE_RMS))
    assert reason == (
        "y: 1 elements out of tolerance; first at [0]: got 3, expected 2 (off by 1 > atol 0.49 x RMS(ref) 2 = 0.98, "
        "and by 0.5 of it > rtol 0: both rules failed)"
    )
    assert stats["failed_elements"] == 1


def test_relative_threshold_both_sides() -> None:
    # error 1 on an element of magnitude 2: relative error 0.5 (less a hair for the 1e-8 guard)
    ref, out = t(2.0, -2.0, 2.0, -2.0), t(2.0, -2.0, 2.0, -3.0)
    assert compare("y", out, ref, Tolerance(0.0, 0.5, LOOSE_RMS))[0] is None
    reason, _ = compare("y", out, ref, Tolerance(0.0, 0.4999, LOOSE_RMS))
    assert reason is not None and reason.startswith(
        "y: 1 elements out of tolerance; first at [3]: got -3, expected -2 ("
    )
    assert reason.endswith("and by 0.5 of it > rtol 0.4999: both rules failed)")


def test_relative_error_equal_to_rtol_passes() -> None:
    # the rule is strict: an element fails only when |err| / (|ref| + 1e-8) is above rtol
    ref, out = t(2.0, 2.0), t(3.0, 2.0)
    rtol = 1.0 / (2.0 + 1e-8)
    assert compare("y", out, ref, Tolerance(0.0, rtol, LOOSE_RMS))[0] is None
    assert compare("y", out, ref, Tolerance(0.0, rtol * (1 - 1e-12), LOOSE_RMS))[0] is not None


def test_an_element_fails_only_when_both_thresholds_are_exceeded() -> None:
    ref, out = t(2.0, 2.0), t(3.0, 2.0)  # abs error 1 (vs 0.1 * RMS 2), rel error 0.5
    assert compare("y", out, ref, Tolerance(0.1, 0.6, LOOSE_RMS))[0] is None
    assert compare("y", out, ref, Tolerance(0.6, 0.1, LOOSE_RMS))[0] is None
    assert compare("y", out, ref, Tolerance(0.1, 0.1, LOOSE_RMS))[0] is not None


def test_relative_error_guard_near_zero() -> None:
    # where the reference is 0 the relative error is |err| / 1e-8: here 1e-9 / 1e-8 = 0.1
    ref, out = t(0.0, 4.0), t(1e-9, 4.0)
    assert compare("y", out, ref, Tolerance(0.0, 0.09, LOOSE_RMS))[0] is not None
    assert compare("y", out, ref, Tolerance(0.0, 0.11, LOOSE_RMS))[0] is None


def test_first_failure_is_reported_by_index_in_several_dimensions() -> None:
    ref = torch.ones(2, 3, dtype=torch.float64)
    out = ref.clone()
    out[1, 2] = 5.0
    out[1, 0] = 1.5
    reason, stats = compare("o", out, ref, Tolerance(0.1, 0.1, LOOSE_RMS))
    assert reason is not None and reason.startswith(
        "o: 2 elements out of tolerance; first at [1, 0]: got 1.5, expected 1 ("
    )
    assert stats["failed_elements"] == 2 and stats["max_abs_err"] == 4.0


def test_rms_rule_both_sides() -> None:
    # ratio exactly 0.5: err (1, 1) against ref (2, 2)
    ref, out = t(2.0, 2.0), t(3.0, 3.0)
    assert compare("y", out, ref, Tolerance(1.0, 1.0, 0.5000001))[0] is None
    assert compare("y", out, ref, Tolerance(1.0, 1.0, 0.5))[0] == (
        "y: RMS error ratio 0.5 >= 0.5 (rule rms: RMS(out - ref) / RMS(ref))"
    )


def test_zero_reference_uses_a_tiny_rms() -> None:
    ref = t(0.0, 0.0)
    assert compare("y", ref.clone(), ref, Tolerance(0.0, 0.0, 1e-12)) == (
        None,
        {"max_abs_err": 0.0, "rms_ratio": 0.0, "failed_elements": 0},
    )
    reason, stats = compare("y", t(1e-31, 0.0), ref, Tolerance(1e6, 1e6, 1e9))
    assert stats["rms_ratio"] == pytest.approx(1e-31 / 2**0.5 / 1e-30)
    assert reason is None


def test_empty_outputs() -> None:
    empty = torch.zeros(0, dtype=torch.float64)
    assert compare("y", empty, empty, Tolerance(0.0, 0.0, 1e9))[1]["max_abs_err"] == 0.0


def test_lower_precision_outputs_are_compared_in_float64() -> None:
    ref = t(1.0, 2.0)
    out = torch.tensor([1.0, 2.0], dtype=torch.float16)
    assert compare("y", out, ref, Tolerance(0.0, 0.0, 1e-12))[0] is None


def test_tolerance_is_immutable() -> None:
    import dataclasses

    tol = Tolerance(1.0, 2.0, 3.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tol.atol = 0.0  # type: ignore[misc]
    assert hash(tol) == hash(Tolerance(1.0, 2.0, 3.0))


def oracle(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> tuple[bool, int]:
    """The rule as the module docstring states it, all in float64: (passes, failed elements)."""
    o, r = out.to(torch.float64), ref.to(torch.float64)
    if not bool(torch.isfinite(o).all()):
        return False, -1
    err = (o - r).abs()
    rms_ref = float(r.pow(2).mean().sqrt()) or 1e-30
    fails = (err > tol.atol * rms_ref) & (err / (r.abs() + 1e-8) > tol.rtol)
    rms_ok = float((o - r).pow(2).mean().sqrt()) / rms_ref < tol.rms
    return int(fails.sum()) == 0 and rms_ok, int(fails.sum())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_the_fast_rule_gives_the_float64_rules_verdict(dtype: torch.dtype) -> None:
    """Random outputs around a reference, some near each threshold, with a NaN now and then: the verdict
    and the count of failed elements are the float64 rule's."""
    gen = torch.Generator().manual_seed(7)
    tol = Tolerance(atol=1e-2, rtol=1e-2, rms=5e-3)
    for trial in range(200):
        ref = torch.randn(64, 33, generator=gen) * 10 ** float(torch.randint(-3, 4, (1,), generator=gen))
        scale = float(tol.atol * ref.pow(2).mean().sqrt()) * [0.0, 0.5, 0.99, 1.5, 4.0][trial % 5]
        noise = torch.randn(ref.shape, generator=gen) * scale
        out = (ref + noise).to(dtype)
        if trial % 23 == 0:
            out.view(-1)[trial % out.numel()] = float("nan")
        reason, stats = compare("y", out, ref.to(dtype), tol)
        passes, n_fail = oracle(out, ref.to(dtype), tol)
        assert (reason is None) == passes, (trial, reason)
        if n_fail >= 0:
            assert stats["failed_elements"] == n_fail, trial


def test_finite_outputs_whose_difference_overflows_float32_are_compared_in_float64() -> None:
    big = torch.finfo(torch.float32).max * 0.75
    ref = torch.tensor([-big, 1.0], dtype=torch.float32)
    out = torch.tensor([big, 1.0], dtype=torch.float32)  # off by more than float32 holds, but finite
    reason, stats = compare("y", out, ref, Tolerance(1e-2, 1e-2, 1e-2))
    assert reason is not None and "1 elements out of tolerance; first at [0]" in reason, reason
    assert stats["max_abs_err"] == pytest.approx(2 * big) and math.isfinite(stats["rms_ratio"])


def test_a_reference_whose_squares_overflow_float32_still_scales_the_rule() -> None:
    """Its RMS taken in float32 would be inf, and every error would pass under atol * inf."""
    ref = torch.full((4,), 1e20, dtype=torch.float32)
    reason, stats = compare("y", ref * 2, ref, Tolerance(1e-2, 1e-2, 1e-2))
    assert reason is not None and "4 elements out of tolerance" in reason, reason
    assert stats["rms_ratio"] == pytest.approx(1.0)
    assert compare("y", ref.clone(), ref, Tolerance(1e-2, 1e-2, 1e-2))[0] is None


def test_errors_whose_squares_underflow_float32_still_count_in_the_rms_rule() -> None:
    """Tiny values: the elements pass their relative test (guarded near zero), the RMS rule fails them;
    in float32 the error's squares would underflow to an RMS of 0."""
    ref = torch.full((4,), 1e-30, dtype=torch.float32)
    reason, stats = compare("y", ref * 2, ref, Tolerance(1e-2, 1e-2, 1e-2))
    assert reason is not None and reason.startswith("y: RMS error ratio"), reason
    assert stats["rms_ratio"] == pytest.approx(1.0, rel=1e-5)


def test_float64_outputs_are_compared_in_float64() -> None:
    """A difference float32 cannot hold (1e-12 of 1.0) still fails a rule that tight."""
    reason, stats = compare("y", t(1.0 + 1e-12, 2.0), t(1.0, 2.0), Tolerance(0.0, 1e-13, LOOSE_RMS))
    assert reason is not None and "1 elements out of tolerance; first at [0]" in reason, reason
    assert stats["max_abs_err"] > 0


def test_an_error_exactly_at_the_absolute_threshold_passes() -> None:
    """RMS(ref) = 1 and atol 0.5: an error of exactly 0.5 is not over it; one of 2.0 is."""
    reason, stats = compare("y", t(1.5, 1.0, 3.0), t(1.0, 1.0, 1.0), Tolerance(0.5, 0.1, LOOSE_RMS))
    assert stats["failed_elements"] == 1 and reason is not None and "first at [2]" in reason, reason


def test_a_failure_at_a_zero_reference_states_the_relative_error_the_rule_used() -> None:
    """The reason names the element's relative error as the rule computed it, |err| / (|ref| + 1e-8):
    at a reference of 0, 1e-9 / 1e-8 = 0.1 (a user reads why the element failed)."""
    reason, _ = compare("y", t(1e-9, 4.0), t(0.0, 4.0), Tolerance(0.0, 0.09, LOOSE_RMS))
    assert reason == (
        "y: 1 elements out of tolerance; first at [0]: got 1e-09, expected 0 (off by 1e-09 > atol 0 x RMS(ref) "
        "2.83 = 0, and by 0.1 of it > rtol 0.09: both rules failed)"
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_empty_outputs_pass_even_the_strictest_rms_rule(dtype: torch.dtype) -> None:
    """A case whose output has no element (a zero-size shape) has nothing wrong: no error, an RMS ratio
    of 0, whatever the tolerance."""
    empty = torch.zeros(0, 3, dtype=dtype)
    assert compare("y", empty, empty.clone(), Tolerance(0.0, 0.0, 1e-12)) == (
        None,
        {"max_abs_err": 0.0, "rms_ratio": 0.0, "failed_elements": 0},
    )


ALLCLOSE = Tolerance(atol=0.01, rtol=0.01, allclose=1.0)


def test_the_allclose_rule_fails_an_element_off_by_more_than_atol_plus_rtol_times_its_reference() -> None:
    """KernelBench's rule (Tolerance.allclose): |out - ref| > atol + rtol * |ref| fails an element, each
    element against its own reference, the first failing one named with its values."""
    ref = t(1.0, 100.0, -2.0)
    assert compare("y", ref.clone(), ref, ALLCLOSE) == (
        None,
        {"max_abs_err": 0.0, "rms_ratio": 0.0, "failed_elements": 0},
    )
    # 100 may be off by 1.01, 1.0 by 0.02: 100.5 passes (the relative part scales with |ref|), 1.05 fails
    reason, stats = compare("y", t(1.05, 100.5, -2.0), ref, ALLCLOSE)
    assert reason == (
        "y: 1 elements out of tolerance; first at [0]: got 1.05, expected 1 (off by 0.05 > atol 0.01 + rtol 0.01 "
        "x |expected|, torch.allclose's rule)"
    )
    assert stats["failed_elements"] == 1 and stats["max_abs_err"] == pytest.approx(0.5)
    assert stats["rms_ratio"] == pytest.approx(math.sqrt((0.05**2 + 0.5**2) / 3) / math.sqrt((1 + 100**2 + 4) / 3))
    # the first failing element in order, in two dimensions; an error of exactly the bound passes
    two = torch.tensor([[0.0, 0.0], [0.0, 4.0]], dtype=torch.float64)
    got = torch.tensor([[0.01, 0.0], [0.5, 4.0]], dtype=torch.float64)
    reason, stats = compare("z", got, two, ALLCLOSE)
    assert (
        stats["failed_elements"] == 1
        and reason is not None
        and reason.startswith(
            "z: 1 elements out of tolerance; first at [1, 0]: got 0.5, expected 0 (off by 0.5 > atol 0.01"
        )
    ), reason
    # an error below the rule's bound everywhere but above the RMS rule's: allclose decides alone
    assert compare("w", t(1.0 + 0.015, 100.0), t(1.0, 100.0), ALLCLOSE)[0] is None
