import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    """The inclusive scan of the vector, float32."""
    return torch.cumsum(data.double(), dim=0).to(torch.float32)
