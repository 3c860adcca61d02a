"""A Triton kernel with two Proton scopes to profile with `kcoral proton`.

    kcoral proton --send examples/proton_capture --output-dir proton -- python capture.py [FIRST SECOND [LAUNCHES]]
    kcoral proton summarize proton/proton.chrome_trace

Each of its 4 CTAs (4 warps each) spins FIRST SM clock cycles (default 20,000) inside the scope "first",
then SECOND (default 50,000) inside "second": the summary's per-scope cycles are those numbers (plus the
few cycles of reading the clock). The scopes are marked with Proton's language: ``pl.enter_scope(NAME)`` /
``pl.exit_scope(NAME)`` (or ``with pl.scope(NAME):``); kcoral proton starts and finalizes Proton around
this script (kcoral.profiling.proton_run), so the script does neither.
"""

import sys

import torch
import triton
import triton.language as tl
import triton.profiler.language as pl


@triton.jit
def _clock():
    return tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def spin_kernel(out, FIRST: tl.constexpr, SECOND: tl.constexpr):
    pl.enter_scope("first")
    t0 = _clock()
    t = t0
    while t - t0 < FIRST:
        t = _clock()
    pl.exit_scope("first")
    with pl.scope("second"):
        t1 = _clock()
        u = t1
        while u - t1 < SECOND:
            u = _clock()
    tl.store(out + tl.program_id(0), (u - t0).to(tl.float32))


if __name__ == "__main__":
    first, second = (int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (20000, 50000)
    launches = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    out = torch.zeros(4, device="cuda")
    for _ in range(launches):
        spin_kernel[(4,)](out, FIRST=first, SECOND=second, num_warps=4)
    torch.cuda.synchronize()
    print("the kernel's own clock span per CTA (cycles):", out.tolist())
