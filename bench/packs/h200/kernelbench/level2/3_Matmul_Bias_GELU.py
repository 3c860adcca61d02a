import torch
import torch.nn as nn


class Model(nn.Module):
    """x @ W + b, then GELU, with W and b parameters of the module (drawn at construction)."""

    def __init__(self, in_features: int, out_features: int):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) / in_features**0.5)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(torch.matmul(x, self.weight) + self.bias)


batch_size = 2048
in_features = 2048
out_features = 2048


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
