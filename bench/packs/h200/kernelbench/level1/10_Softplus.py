import torch
import torch.nn as nn


class Model(nn.Module):
    """Softplus, (1 / beta) * log(1 + exp(beta * x)), linear above the threshold."""

    def __init__(self, beta: float, threshold: float):
        super(Model, self).__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.softplus(x, beta=self.beta, threshold=self.threshold)


batch_size = 4096
dim = 16384
beta = 2.0
threshold = 10.0


def get_inputs():
    x = torch.randn(batch_size, dim) * 4
    return [x]


def get_init_inputs():
    return [beta, threshold]
