"""A KDA candidate that is wrong by a small margin: the FLA result plus Gaussian noise of 5% of the
output's RMS (the task's RMS tolerance is 3%). final_state is left exact."""

import torch
from fla.ops.kda import chunk_kda

NOISE = 0.05


def setup(data, B, T, H):
    out, final = data["output"], data["final_state"]
    gen = torch.Generator(device=out.device).manual_seed(1234)

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
            o = o.float()
            rms = o.pow(2).mean().sqrt()
            noise = torch.randn(o.shape, generator=gen, device=o.device, dtype=torch.float32)
            out.copy_(o + NOISE * rms * noise)
        final.copy_(state)

    return run
