"""Issue 8, class 6 (rewrite saved outputs later): a softmax that forgets the tail columns (wrong
whenever cols % 16 != 0: the one_column workload), which keeps every data dict it was given and, in
each later setup(), writes the correct answer into the earlier cases' output buffers. The supervisor
copies each call's outputs as the call returns: what is written afterwards is never read."""

import torch

TILE = 16
_seen = []


def setup(data):
    for old in _seen:
        torch.softmax(old["x"], dim=-1, out=old["y"])
    _seen.append(data)
    x, y = data["x"], data["y"]
    body = x.shape[-1] - x.shape[-1] % TILE

    def run():
        torch.sub(x, x.amax(dim=-1, keepdim=True), out=y)
        y[:, :body].exp_()
        y.div_(y.sum(dim=-1, keepdim=True))

    return run
