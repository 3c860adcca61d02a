import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    """The 256 counts (int64) of the uint8 values."""
    return torch.bincount(data, minlength=256)
