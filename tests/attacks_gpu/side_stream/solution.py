"""Attack 13 (GPU): do the work on a side stream and return at once, hoping the timer only waits
for the default stream. The harness synchronises the whole device before its end event."""

import torch
from fla.ops.kda import chunk_kda


def setup(data, B, T, H):
    side = torch.cuda.Stream()

    def run():
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            o, s = chunk_kda(
                data["q"],
                data["k"],
                data["v"],
                data["g"],
                data["beta"],
                scale=128**-0.5,
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
            data["output"].copy_(o)
            data["final_state"].copy_(s)

    return run
