"""Attack 13 (GPU): compute once, then return without writing, hoping the output buffers still hold
the previous call's results (stale caching-allocator memory). The harness NaN-poisons the outputs
before every checked and timed call, so stale results cannot survive."""

from fla.ops.kda import chunk_kda

_calls = {"n": 0}


def setup(data, B, T, H):
    def run():
        _calls["n"] += 1
        if _calls["n"] > 1:
            return
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
