"""A Triton row-softmax kernel to profile with `kcoral ncu`.

    kcoral ncu --send examples/ncu_capture -o softmax.ncu-rep --set full --launch-count 1 \
        --kernel-name softmax_kernel -- python capture.py

Warms up (compilation and autotuning happen outside the profiled launch), checks the result
against torch.softmax, then launches the kernel once more inside an NVTX range "target".
ROWS and COLS come from the environment (-e ROWS=... -e COLS=...).
"""

import os

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


def main() -> None:
    rows, cols = int(os.environ.get("ROWS", "16384")), int(os.environ.get("COLS", "4096"))
    torch.manual_seed(0)
    x = torch.randn(rows, cols, device="cuda")
    y = softmax(x)
    torch.cuda.synchronize()
    err = (y - torch.softmax(x, dim=1)).abs().max().item()
    print(f"softmax {rows}x{cols} on {torch.cuda.get_device_name(0)}: max abs error {err:.2e}")
    torch.cuda.nvtx.range_push("target")
    softmax(x)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
