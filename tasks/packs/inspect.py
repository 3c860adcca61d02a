"""``python -P -m kcoral.tasks.packs.inspect REQUEST_JSON``: describe problems by running their code, in
the job image (runner.packprobe starts it in a container of the jobs' profile, the packs read-only).

REQUEST_JSON: ``{"deadline_s": S, "problems": [{"key", "root", "manifest"}]}``. For each problem, a
child process (forked once torch is imported) builds every public workload's inputs and the
reference's outputs, first on the meta device (shapes without memory or compute), else on the CPU
(an op the meta device lacks: torch.bincount's output size is its data's), a problem's "cuda"
tensors made on whichever of the two, and hands back their shapes and dtypes. A child that raises,
runs past ``deadline_s`` or dies is that problem's error; the next problem gets a child of its own.
Each answer is one line on stdout, ``KCORAL-INSPECT {"key": ..., "shapes": [...]}`` or ``{"key": ...,
"error": "..."}``, with the ``seconds`` it took and the number of modules its child had to ``import``
(the parent imports what every child needs first: ``warm``); what a problem prints goes nowhere.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

MARK = "KCORAL-INSPECT "
#: the most bytes of one child's answer
MAX_ANSWER = 1 << 20
#: what a child's answer may say (the parent adds the problem's key and the seconds it took)
ANSWER_FIELDS = ("shapes", "error", "imports")


def describe(root: Path, manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """Each distinct workload's data as the task's signature has it: inputs, scalars, outputs, and
    where they were built ("meta" or "cpu")."""
    import torch  # noqa: PLC0415

    from kcoral.tasks.packs import values  # noqa: PLC0415
    from kcoral.tasks.packs.adapters import bind  # noqa: PLC0415

    adapter = bind(root, manifest)
    shapes: list[dict[str, Any]] = []
    for w in manifest["workloads"]:
        if any(s["params"] == w["params"] for s in shapes):
            continue
        try:
            with torch.device("meta"), cuda_as("meta"):
                inputs = adapter.make_inputs(w["params"], 0, "meta")
                outputs = adapter.reference(inputs, w["params"])
            built = "meta"
        except Exception:  # noqa: BLE001 - an op the meta device lacks: build them for real
            with cuda_as("cpu"):
                inputs = adapter.make_inputs(w["params"], 0, "cpu")
                outputs = adapter.reference(inputs, w["params"])
            built = "cpu"
        tensors = {k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)}
        scalars = {k: v for k, v in inputs.items() if not isinstance(v, torch.Tensor) and k != values.TREE}
        shapes.append(
            {
                "params": w["params"],
                "inputs": values.specs(tensors),
                "scalars": scalars,
                "outputs": values.specs(outputs),
                "built_on": built,
            }
        )
    return shapes


def cuda_as(device: str) -> Any:
    """A torch function mode under which a problem's CUDA tensors are ``device`` ones ("meta": shapes and
    dtypes, no memory; "cpu": for an op the meta device lacks): the inspector's container has no GPU,
    and a GPU suite's problems name "cuda" (a factory's ``device=``, ``.cuda()``, ``.to("cuda")``, a
    CUDA ``torch.Generator``). Only ever in the inspector's child, a process thrown away after one
    problem: it also swaps torch.Generator and makes CUDA's synchronisation nothing there."""
    import torch  # noqa: PLC0415
    from torch.overrides import TorchFunctionMode  # noqa: PLC0415

    def cuda(value: Any) -> bool:
        try:
            return isinstance(value, str | torch.device) and torch.device(value).type == "cuda"
        except (RuntimeError, TypeError):
            return False

    if not getattr(torch.Generator, "kcoral_cuda_as_cpu", False):  # once per child
        original = torch.Generator

        class Generator(original):  # type: ignore[misc, valid-type]
            """torch.Generator, a CPU one where a CUDA one is asked for (still a type: torch's own modules
            annotate with it)."""

            kcoral_cuda_as_cpu = True

            def __new__(cls, device: Any = "cpu") -> Any:
                return original() if cuda(device) else original(device)

        torch.Generator = Generator
        torch.cuda.synchronize = lambda *args, **kwargs: None

    class CudaAs(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = dict(kwargs or {})
            if cuda(kwargs.get("device")):
                kwargs["device"] = device
            if func is torch.Tensor.cuda:
                return args[0].to(device)
            if func is torch.Tensor.to:
                args = tuple(device if cuda(a) else a for a in args)
            return func(*args, **kwargs)

    return CudaAs()


def warm() -> None:
    """What every child would import for itself, imported once before they fork: torch defers the meta
    device's kernels and the symbolic shapes they use (sympy: ~800 modules, 1.2 s in the CPU image,
    ~6 s per problem on the GPU host, whose imports are slower) to the first meta-device op, so a
    parent that only imported torch left each child to pay them again (37 problems: 176 s there)."""
    import torch  # noqa: PLC0415

    from kcoral.tasks.packs import adapters, values  # noqa: F401, PLC0415

    with torch.device("meta"):
        x = torch.randn(2, 4)
        torch.nn.functional.layer_norm(torch.nn.Linear(4, 4)(x), (4,)).softmax(-1).sum()
        torch.nn.Conv2d(1, 1, 1)(torch.randn(1, 1, 2, 2))


def _child(root: Path, manifest: dict[str, Any], write: int) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    before = len(sys.modules)
    try:
        answer: dict[str, Any] = {"shapes": describe(root, manifest)}
    except BaseException as exc:  # noqa: BLE001 - the problem's failure is its answer
        frames = traceback.extract_tb(exc.__traceback__)
        where = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames) if str(root) in f.filename), "")
        answer = {"error": f"{type(exc).__name__}: {exc}"[:1000] + (f" (at {where})" if where else "")}
    answer["imports"] = len(sys.modules) - before
    data = json.dumps(answer).encode()[:MAX_ANSWER]
    while data:
        data = data[os.write(write, data) :]
    os._exit(0)


def inspect_one(root: Path, manifest: dict[str, Any], deadline_s: float) -> dict[str, Any]:
    """One problem, in a child of its own: its shapes, or its error."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        _child(root, manifest, write)
    os.close(write)
    chunks: list[bytes] = []
    end = time.monotonic() + deadline_s
    timed_out = False
    while True:
        left = end - time.monotonic()
        if left <= 0 or not select.select([read], [], [], left)[0]:
            timed_out = True
            break
        chunk = os.read(read, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(read)
    if timed_out:
        return {"error": f"building its inputs and outputs did not finish in {deadline_s:g} s"}
    try:
        doc = json.loads(b"".join(chunks))
    except ValueError:
        doc = None
    if isinstance(doc, dict):  # the child ran the problem's code, which may have written the pipe itself
        # only what an answer has, so that a line never speaks for another problem or another time
        return {k: doc[k] for k in ANSWER_FIELDS if k in doc}
    if os.WIFSIGNALED(status):
        return {"error": f"the process building its inputs died of signal {os.WTERMSIG(status)}"}
    return {"error": f"the process building its inputs exited with code {os.waitstatus_to_exitcode(status)}"}


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[0]).read_text())
    warm()

    for problem in request["problems"]:
        began = time.monotonic()
        answer = inspect_one(Path(problem["root"]), problem["manifest"], float(request["deadline_s"]))
        seconds = round(time.monotonic() - began, 3)
        print(MARK + json.dumps({"key": problem["key"], **answer, "seconds": seconds}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
