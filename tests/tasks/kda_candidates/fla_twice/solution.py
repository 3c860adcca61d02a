"""A correct but slow KDA candidate: the baseline's fla-core chunk_kda call, made twice per call
(expected speedup ~0.5x: the yardstick for how much of a call's time is the kernels' own)."""

import torch
from fla.ops.kda import chunk_kda


def setup(data, B, T, H):
    out, final = data["output"], data["final_state"]

    def once():
        return chunk_kda(
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

    def run():
        with torch.no_grad():
            once()
            o, state = once()
        out.copy_(o)
        final.copy_(state)

    return run
