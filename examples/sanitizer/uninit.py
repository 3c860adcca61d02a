"""A Triton kernel reading memory nobody wrote, for `kcoral sanitizer` (initcheck must report it):

kcoral sanitizer --send examples/sanitizer --tool initcheck -- python uninit.py broken   # reads torch.empty
kcoral sanitizer --send examples/sanitizer --tool initcheck -- python uninit.py fixed    # reads torch.zeros
"""

import os
import sys

os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"  # before torch's import: every tensor its own cudaMalloc
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def add_one(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n) + 1.0, mask=offs < n)


n = 512
src = torch.empty(n, device="cuda") if sys.argv[1] == "broken" else torch.zeros(n, device="cuda")
dst = torch.zeros(n, device="cuda")
add_one[(triton.cdiv(n, 128),)](src, dst, n, BLOCK=128)
torch.cuda.synchronize()
print("done")
