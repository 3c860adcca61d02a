"""Two CUDA C kernels with a deliberate bug each, for `kcoral sanitizer` (compiled at run time by NVRTC):

    kcoral sanitizer --send examples/sanitizer --tool racecheck -- python race.py shift_left broken
    kcoral sanitizer --send examples/sanitizer --tool synccheck -- python race.py bad_syncwarp broken

``shift_left`` reads a neighbour's shared-memory value with no ``__syncthreads`` between the write and the
read (racecheck: a race across warps); ``bad_syncwarp`` calls ``__syncwarp`` with a mask that leaves the
calling lane out (synccheck: a barrier error). ``fixed`` in place of ``broken`` runs the corrected kernel:
no hazard, no error.
"""

import os
import sys

os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"  # before torch's import: every tensor its own cudaMalloc
import torch  # noqa: E402

SOURCE = r"""
extern "C" __global__ void shift_left(float* out, int fixed) {
    __shared__ float tile[256];
    int t = threadIdx.x;
    tile[t] = (float)t;
    if (fixed) __syncthreads();
    out[t] = tile[(t + 1) % 256];   // a neighbour's value: without the barrier, a race across warps
}
extern "C" __global__ void bad_syncwarp(float* out, int fixed) {
    int t = threadIdx.x;
    out[t] = (float)t;
    if (fixed) __syncwarp();
    else __syncwarp(0xfffffffeu);   // lane 0 calls it with a mask that leaves lane 0 out
}
"""

if __name__ == "__main__":
    name, fixed = sys.argv[1], int(sys.argv[2] == "fixed")
    out = torch.zeros(256, device="cuda")
    kernel = torch.cuda._compile_kernel(SOURCE, name)  # NVRTC, through torch (2.9 and later)
    kernel(grid=(1, 1, 1), block=(256, 1, 1), args=[out, fixed])
    torch.cuda.synchronize()
    print(name, "fixed" if fixed else "broken", float(out.sum()))
