"""A first kcoral job: report the device, time a matrix product, write a result file."""

import json
import os
import time

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
name = torch.cuda.get_device_name(0) if device == "cuda" else "CPU"
print(f"torch {torch.__version__} on {name} ({torch.cuda.device_count()} GPU visible)")

n = 4096 if device == "cuda" else 512
dtype = torch.bfloat16 if device == "cuda" else torch.float32
a = torch.randn(n, n, device=device, dtype=dtype)
b = torch.randn(n, n, device=device, dtype=dtype)
for _ in range(3):
    a @ b
if device == "cuda":
    torch.cuda.synchronize()
reps = 20
start = time.perf_counter()
for _ in range(reps):
    a @ b
if device == "cuda":
    torch.cuda.synchronize()
ms = (time.perf_counter() - start) / reps * 1e3
tflops = 2 * n**3 / (ms / 1e3) / 1e12
print(f"{n}x{n} matmul: {ms:.3f} ms, {tflops:.2f} TFLOP/s")

with open(os.path.join(os.environ.get("KCORAL_OUTPUT_DIR", "."), "result.json"), "w") as f:
    json.dump({"device": name, "n": n, "ms": ms, "tflops": tflops}, f)
