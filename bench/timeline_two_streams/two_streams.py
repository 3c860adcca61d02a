"""kcoral timeline's acceptance program (scripts/gpu-host-timeline.sh): stream A runs four sgemms, stream B
a relu, then the host sleeps 20 ms, then B runs a sigmoid: the summary must show a gap of at least 20 ms
between B's two kernels, and A's kernels back to back."""

import time

import torch

a = torch.randn(2048, 2048, device="cuda")
b = torch.randn(2048, 2048, device="cuda")
s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
for _ in range(3):  # warm up: the first launches load the kernels' modules
    torch.sigmoid(torch.relu(a @ b))
torch.cuda.synchronize()
with torch.cuda.stream(s1):
    for _ in range(4):
        c = a @ b
with torch.cuda.stream(s2):
    torch.relu(a)
s2.synchronize()
time.sleep(0.020)  # the deliberate gap
with torch.cuda.stream(s2):
    torch.sigmoid(b)
torch.cuda.synchronize()
print("streams", s1.cuda_stream, s2.cuda_stream)
