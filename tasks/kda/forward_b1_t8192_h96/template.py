"""A working start for the KDA forward tasks: the baseline's own approach (fla-core's chunk_kda).

The evaluation calls setup(data, B, T, H) once per workload, then times the callable it returns. It
must overwrite data['output'] (bf16 [B, T, H, 128]) and data['final_state'] (fp32 [B, H, 128, 128],
V-first) in place, every element, on every call (both are NaN-poisoned before each call; never rebind
them). Inputs: q, k, v, g (bf16 [B, T, H, 128]), beta (bf16 [B, T, H]), A_log (fp32 [H]), dt_bias
(fp32 [H*128]), initial_state (fp32 [B, H, 128, 128], V-first), and data['scale'] (a float).
"""

import torch
from fla.ops.kda import chunk_kda


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
