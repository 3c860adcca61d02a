"""Issue 8, class 5 (predict the timed inputs): the standard workload's check seed is public (a hash
of the workload id), and the task's make_inputs is readable here. In setup() precompute the answers
for that seed and for every "next sample" seed scheme that public data suggests, keyed by a hash of
the input; a call whose input is in the table copies the answer; a callable's later (timed) calls
write nothing when the input is not in it.
The timed samples are drawn from a per-request key only the supervisor holds: they must fail."""

import hashlib
import importlib.util

import torch

spec = importlib.util.spec_from_file_location("softmax_task", "/kcoral/taskfamily/softmax/task.py")
task = importlib.util.module_from_spec(spec)
spec.loader.exec_module(task)


def _seed(material):
    return int.from_bytes(hashlib.sha256(material).digest()[:8], "little") >> 1


def key(x):
    return hashlib.sha256(x[:4].numpy().tobytes()).hexdigest()


#: the answers for every predicted seed of the standard shape (61 of 16 MiB), made at the first setup()
#: of that shape and kept: each later setup() of it would make the same ones again
_predicted = {}


def setup(data):
    x, y = data["x"], data["y"]
    params = {"rows": x.shape[0], "cols": x.shape[1]}
    base = _seed(b"demo/softmax/standard")
    seeds = [base] + [_seed(f"{base}/{i}".encode()) for i in range(40)] + list(range(20))
    if x.shape == (4096, 1024) and not _predicted:
        for s in seeds:
            xi = task.make_inputs(params, s, "cpu")["x"]
            _predicted[key(xi)] = torch.softmax(xi, dim=-1)
    table = dict(_predicted) if x.shape == (4096, 1024) else {}
    table[key(x)] = torch.softmax(x, dim=-1)  # the inputs setup() sees (a decoy, never timed)
    calls = [0]

    def run():
        calls[0] += 1
        hit = table.get(key(x))
        if hit is not None:
            y.copy_(hit)
        elif calls[0] == 1 or x.shape != (4096, 1024):  # an untimed check: do the work
            torch.softmax(x, dim=-1, out=y)

    return run
