import torch
from task import input_t, output_t
from utils import make_match_reference


def generate_input(size: int, seed: int) -> input_t:
    gen = torch.Generator(device="cuda").manual_seed(seed)
    data = torch.randn(size, device="cuda", dtype=torch.float32, generator=gen)
    offset = torch.rand((), device="cuda", dtype=torch.float32, generator=gen) * 2 + 1
    return (data + offset).contiguous()


def ref_kernel(data: input_t) -> output_t:
    # float64 accumulation: the exact answer, within float32's rounding
    return data.sum(dtype=torch.float64).to(torch.float32)


check_implementation = make_match_reference(ref_kernel, rtol=1e-4, atol=1e-3)
