"""Attack 23 on the GPU (slow the baseline without CPU): an honest FLA call, plus a second process
that queues seconds of GPU work (large matmuls) at once and then sleeps in cudaDeviceSynchronize:
the GPU stays busy while the baseline's calls run, and the candidate's containers use almost no
CPU. The supervisor's quiet-GPU probe before each call must see the busy GPU: flagged."""

import subprocess
import sys

import torch
from fla.ops.kda import chunk_kda

HOG = """
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
while True:
    for _ in range(400):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
"""
_hog = subprocess.Popen([sys.executable, "-c", HOG])


def setup(data, B, T, H):
    out, final = data["output"], data["final_state"]

    def run():
        with torch.no_grad():
            o, state = chunk_kda(
                data["q"],
                data["k"],
                data["v"],
                data["g"],
                data["beta"],
                scale=data["scale"],
                initial_state=data["initial_state"],
                output_final_state=True,
                use_qk_l2norm_in_kernel=True,
                use_gate_in_kernel=True,
                use_beta_sigmoid_in_kernel=True,
                safe_gate=True,
                lower_bound=-5.0,
                state_v_first=True,
                A_log=data["A_log"],
                dt_bias=data["dt_bias"],
            )
        out.copy_(o)
        final.copy_(state)

    return run
