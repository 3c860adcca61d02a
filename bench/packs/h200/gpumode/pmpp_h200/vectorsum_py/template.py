import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    """The sum of the vector, as a 0-d float32 tensor."""
    return data.sum(dtype=torch.float64).to(torch.float32)
