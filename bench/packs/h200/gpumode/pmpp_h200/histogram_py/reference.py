import torch
from task import input_t, output_t
from utils import verbose_allclose


def generate_input(size: int, contention: int, seed: int) -> input_t:
    gen = torch.Generator(device="cuda").manual_seed(seed)
    data = torch.randint(0, 256, (size,), device="cuda", dtype=torch.uint8, generator=gen)
    hot = torch.randint(0, 256, (), device="cuda", dtype=torch.uint8, generator=gen)
    chosen = torch.rand(size, device="cuda", generator=gen) < contention / 100.0
    return torch.where(chosen, hot, data).contiguous()


def ref_kernel(data: input_t) -> output_t:
    return torch.bincount(data, minlength=256)


def check_implementation(data: input_t, output: output_t):
    expected = ref_kernel(data)
    reasons = verbose_allclose(output, expected, rtol=0.0, atol=0.0)
    return (False, "mismatch: " + "; ".join(reasons)) if reasons else (True, "")
