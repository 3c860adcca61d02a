"""Attack 13 (GPU): pin the inputs in L2 with a persisting access-policy window on the current
stream, so the timed call finds them cached despite the harness's flush. The harness resets
persisting L2 lines before every timed call (cuCtxResetPersistingL2Cache), so no gain is expected.

The window is set through cuda-python's typed runtime bindings (a ctypes call with the wrong
argument types leaves a CUDA error that makes the submission fail for its own reasons, which
would prove nothing); what was set is printed to stderr so a run shows the attack was active."""

import sys

import torch
from fla.ops.kda import chunk_kda


def _check(result, what):
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        from cuda.bindings import runtime as rt

        rt.cudaGetLastError()  # leave no pending error behind for torch to trip over
        raise RuntimeError(f"{what}: {err}")
    return result[1] if isinstance(result, tuple) and len(result) > 1 else None


def _pin(tensor):
    from cuda.bindings import runtime as rt

    dev = torch.cuda.current_device()
    max_window = _check(
        rt.cudaDeviceGetAttribute(rt.cudaDeviceAttr.cudaDevAttrMaxAccessPolicyWindowSize, dev), "max window"
    )
    max_persist = _check(
        rt.cudaDeviceGetAttribute(rt.cudaDeviceAttr.cudaDevAttrMaxPersistingL2CacheSize, dev), "max persisting L2"
    )
    _check(rt.cudaDeviceSetLimit(rt.cudaLimit.cudaLimitPersistingL2CacheSize, max_persist), "set limit")
    window = rt.cudaAccessPolicyWindow()
    window.base_ptr = tensor.data_ptr()
    window.num_bytes = min(tensor.numel() * tensor.element_size(), max_window)
    window.hitRatio = 1.0
    window.hitProp = rt.cudaAccessProperty.cudaAccessPropertyPersisting
    window.missProp = rt.cudaAccessProperty.cudaAccessPropertyStreaming
    value = rt.cudaStreamAttrValue()
    value.accessPolicyWindow = window
    stream = torch.cuda.current_stream().cuda_stream
    _check(
        rt.cudaStreamSetAttribute(stream, rt.cudaStreamAttrID.cudaLaunchAttributeAccessPolicyWindow, value),
        "stream attribute",
    )
    print(f"l2_persist: {window.num_bytes} bytes of q persisting in L2 (limit {max_persist})", file=sys.stderr)


def setup(data, B, T, H):
    try:
        _pin(data["q"])
    except (ImportError, RuntimeError) as exc:  # no cuda-python, or the driver refused: no attack
        print(f"l2_persist: not pinned: {exc}", file=sys.stderr)

    def run():
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
