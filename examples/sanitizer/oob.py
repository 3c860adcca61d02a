"""A Triton copy with a deliberate out-of-bounds read for `kcoral sanitizer` (memcheck must report it):

    kcoral sanitizer --send examples/sanitizer --tool memcheck -- python oob.py oob      # 1024 floats read of 100
    kcoral sanitizer --send examples/sanitizer --tool memcheck -- python oob.py masked   # the fix: no error

Every tensor is its own cudaMalloc (no caching allocator), rounded by torch to 512 bytes: the unmasked read
goes 3.5 KB past it, where memcheck sees it (24 floats past 1000 stayed inside the rounding and were not seen).
"""

import os
import sys

os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"  # before torch's import: every tensor its own cudaMalloc
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr, MASKED: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if MASKED:  # noqa: SIM108 - a constexpr branch: the unmasked kernel has no mask at all
        x = tl.load(src + offs, mask=offs < n)
    else:
        x = tl.load(src + offs)
    tl.store(dst + offs, x, mask=offs < n)


n = 100
src = torch.arange(n, device="cuda", dtype=torch.float32)
dst = torch.empty_like(src)
copy_kernel[(triton.cdiv(n, 1024),)](src, dst, n, BLOCK=1024, MASKED=sys.argv[1] == "masked")
torch.cuda.synchronize()
print("copied", bool((dst == src).all()))
