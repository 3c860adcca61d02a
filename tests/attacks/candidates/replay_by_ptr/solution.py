"""Attack 13 (replay keyed on data_ptr/shape): compute once per input buffer, then replay the saved
result for the same (data_ptr, shape), whatever the buffer now holds."""

import torch

_cache = {}


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        key = (x.data_ptr(), tuple(x.shape))
        if key not in _cache:
            _cache[key] = torch.softmax(x, dim=-1)
        y.copy_(_cache[key])

    return run
