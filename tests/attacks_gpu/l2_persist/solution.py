"""Attack 13 (GPU): pin the inputs in L2 with a persisting access-policy window on the current
stream, so the timed call finds them cached despite the harness's flush. The harness resets
persisting L2 lines before every timed call (cuCtxResetPersistingL2Cache), so no gain is expected."""

import contextlib
import ctypes

import torch
from fla.ops.kda import chunk_kda


class _Window(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hitRatio", ctypes.c_float),
                ("hitProp", ctypes.c_int), ("missProp", ctypes.c_int)]


class _Attr(ctypes.Union):
    _fields_ = [("accessPolicyWindow", _Window), ("pad", ctypes.c_char * 64)]


def _pin(tensor):
    cudart = ctypes.CDLL("libcudart.so.13")
    cudart.cudaDeviceSetLimit(0x06, 64 << 20)  # cudaLimitPersistingL2CacheSize
    attr = _Attr()
    attr.accessPolicyWindow = _Window(tensor.data_ptr(), min(tensor.numel() * tensor.element_size(), 64 << 20),
                                      1.0, 2, 1)  # hit: persisting, miss: streaming
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    cudart.cudaStreamSetAttribute(stream, 1, ctypes.byref(attr))  # cudaStreamAttributeAccessPolicyWindow


def setup(data, B, T, H):
    with contextlib.suppress(OSError, AttributeError):  # no libcudart here: the attack does nothing
        _pin(data["q"])

    def run():
        o, s = chunk_kda(data["q"], data["k"], data["v"], data["g"], data["beta"], scale=128 ** -0.5,
                         initial_state=data["initial_state"], output_final_state=True,
                         use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True,
                         safe_gate=True, lower_bound=-5.0, state_v_first=True, A_log=data["A_log"],
                         dt_bias=data["dt_bias"])
        data["output"].copy_(o)
        data["final_state"].copy_(s)

    return run
