"""Attack 4/13 on the GPU (answer before the work is done): torch.cuda.synchronize is made a no-op in
this process, so the worker answers the supervisor as soon as the FLA kernels are queued, while they
still run. The supervisor copies the outputs when the answer comes and stops its clock only when
that copy is done, so the early answer must buy a failure (unfinished outputs) or nothing."""

import torch
from fla.ops.kda import chunk_kda

torch.cuda.synchronize = lambda *args, **kwargs: None


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
