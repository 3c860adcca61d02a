"""A CuTe DSL kernel with IKET ranges and markers, for `kcoral iket`.

Each CTA of 4 warps walks TILES tiles of a vector (out = a * x + y). Warp 0 plays "loader" (it
also sums its tile, more work per step), warps 1-3 play "worker"; every warp marks "tile" at the
start of each step, so the marker's period across CTAs is the steady-state time of one step.
Deterministic (run-iket runs the app twice). Run: python capture.py [--compile-only]
"""

import os
import sys

import cutlass
import cutlass.cute as cute
from cutlass.cute.experimental import iket

THREADS = 128
TILES = int(os.environ.get("TILES", "16"))
CTAS = int(os.environ.get("CTAS", "264"))
N = CTAS * TILES * THREADS


@cute.kernel
def axpy_kernel(x: cute.Tensor, y: cute.Tensor, out: cute.Tensor, a: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    warp = cute.arch.warp_idx()
    iket.range_push("cta")
    for t in cutlass.range(TILES):
        iket.mark("tile")
        i = (bidx * TILES + t) * THREADS + tidx
        if warp == 0:
            iket.range_push("load")
            acc = x[i]
            for _ in cutlass.range(8):
                acc = acc * a + y[i]
            out[i] = acc
            iket.range_pop()
        else:
            iket.range_push("work")
            out[i] = a * x[i] + y[i]
            iket.range_pop()
    iket.range_pop()


@cute.jit
def axpy(x: cute.Tensor, y: cute.Tensor, out: cute.Tensor, a: cutlass.Float32):
    axpy_kernel(x, y, out, a).launch(grid=[CTAS, 1, 1], block=[THREADS, 1, 1])


def main() -> None:
    if "--compile-only" in sys.argv:  # no GPU needed: checks the kernel builds
        from cutlass.cute.runtime import make_fake_compact_tensor

        fakes = [make_fake_compact_tensor(cutlass.Float32, (N,)) for _ in range(3)]
        cute.compile(axpy, *fakes, cutlass.Float32(1.0))
        print("compiled")
        return
    import torch
    from cutlass.cute.runtime import from_dlpack

    torch.manual_seed(0)
    x = torch.randn(N, device="cuda")
    y = torch.randn(N, device="cuda")
    out = torch.empty_like(x)
    args = [from_dlpack(t, assumed_align=16) for t in (x, y, out)]
    compiled = cute.compile(axpy, *args, cutlass.Float32(0.5))
    compiled(*args, cutlass.Float32(0.5))
    torch.cuda.synchronize()
    lanes = torch.arange(N, device="cuda") % THREADS >= 32  # warps 1-3 (the workers) compute a * x + y
    ok = torch.allclose(out[lanes], 0.5 * x[lanes] + y[lanes])
    print(f"axpy over {CTAS} CTAs x {TILES} tiles done; worker tile check: {ok}")


if __name__ == "__main__":
    main()
