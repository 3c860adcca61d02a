"""The summariser on compute-sanitizer's own reports from the H200 (2025.3.1 of CUDA 13.0, 2026-12-05; made
by tests/gpu/test_sanitizer_gpu.py and bench/gpu_tools_probe.py, see tests/fixtures/sanitizer/README.md):
each tool's report of our small broken kernels read as the job reads it (the XML's findings, the text's
total), and the fixed kernels' reports as clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from kcoral.profiling.sanitizer_report import load_pair, summarize

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sanitizer"


def _pair(name: str) -> dict:
    return summarize(load_pair(FIXTURES / f"h200-{name}.xml", FIXTURES / f"h200-{name}.txt"))


@pytest.mark.parametrize(
    ("name", "errors", "kernel", "kind", "location"),
    [
        # a Triton kernel reading 1024 floats of a 100-float tensor (its own cudaMalloc, 512 bytes)
        ("memcheck-oob", 80, "copy_kernel", "Invalid __global__ read", "oob.py:12"),
        # CUDA C through NVRTC: a neighbour's shared value read without __syncthreads
        ("racecheck", 1, "shift_left", "Race condition (Write / Read)", None),
        # __syncwarp with a mask that leaves the calling lane out
        ("synccheck", 156, "bad_syncwarp", "Barrier error", None),
        # a Triton kernel reading torch.empty's memory
        ("initcheck", 412, "add_one", "Uninitialized __global__ memory read", "uninit.py:9"),
    ],
)
def test_the_real_reports_name_the_kernel_the_kind_and_the_count(
    name: str, errors: int, kernel: str, kind: str, location: str | None
) -> None:
    doc = _pair(name)
    assert doc["errors"] == errors, doc
    first = doc["groups"][0]
    assert first["kernel"] == kernel and first["kind"].startswith(kind), first
    if location is None:
        assert not first["location"]
    else:
        assert first["location"] and first["location"].endswith(location), first


@pytest.mark.parametrize("name", ["memcheck-masked", "racecheck-fixed"])
def test_the_fixed_kernels_reports_are_clean(name: str) -> None:
    doc = _pair(name)
    assert doc["errors"] == 0 and doc["groups"] == [], doc
