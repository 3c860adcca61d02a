"""Issue 32 (GPU), KernelBench's form: ModelNew does Model's matmul on a side stream and returns its result
at once, hoping the timer waits only for the default stream. The worker synchronises the whole device
before it answers, and copies the result on its own stream: the work is paid for (no gain), or the copy
reads it unfinished (a failure)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = None

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        if self.side is None:
            self.side = torch.cuda.Stream()
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            return torch.matmul(A, B)
