import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    """0.2989 R + 0.5870 G + 0.1140 B for every pixel of the (size, size, 3) image."""
    weights = torch.tensor([0.2989, 0.5870, 0.1140], device=data.device, dtype=data.dtype)
    return torch.sum(data * weights, dim=-1)
