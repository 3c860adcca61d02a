"""Attack 13 (GPU): compute once per input pointer and replay the cached result afterwards
(stale results when the values change under the same pointers). The harness refills fresh
inputs in place before every timed sample and checks every timed call's outputs."""

from fla.ops.kda import chunk_kda

_cache = {}


def setup(data, B, T, H):
    def compute():
        return chunk_kda(
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

    def run():
        key = data["q"].data_ptr()
        if key not in _cache:
            o, s = compute()
            _cache[key] = (o.clone(), s.clone())
        o, s = _cache[key]
        data["output"].copy_(o)
        data["final_state"].copy_(s)

    return run
