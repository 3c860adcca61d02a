"""Issue 32 (GPU), GPU MODE's form: custom_kernel writes the sum into the preallocated output on a side
stream and returns it at once. The worker synchronises the whole device before it answers: no gain, or
a failure where its copy reads the output unfinished."""

import torch

side = []


def custom_kernel(data):
    a, b, c = data
    if not side:
        side.append(torch.cuda.Stream())
    side[0].wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side[0]):
        torch.add(a, b, out=c)
    return c
