import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer, ReLU, then a constant scale given at construction."""

    def __init__(self, in_features: int, out_features: int, scale: float):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.relu(x)
        return x * self.scale


batch_size = 2048
in_features = 2048
out_features = 4096
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
