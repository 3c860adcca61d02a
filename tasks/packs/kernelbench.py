"""A KernelBench problem file as a kcoral task module (tasks.harness.taskdef's functions).

The problem's own code does all the work: its ``get_inputs()`` under a seed the supervisor draws
(every case's and every timed sample's, so the candidate never knows one ahead), its ``Model`` built
from ``get_init_inputs()`` under :data:`INIT_SEED` (KernelBench's rule: both models' weights from the
same seed) as the reference and the baseline, the candidate's ``ModelNew`` built the same way. The
inputs become ``in0``, ``in1``, ... in ``get_inputs()``'s order, the outputs ``out0``, ... (a tuple
returned is several outputs; tasks.packs.values). A worker copies each call's result into the
supervisor's buffers (:func:`tasks.packs.values.write_outputs`), the baseline's as the candidate's.
"""

from __future__ import annotations

import importlib.util
import io
import random
import tokenize
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from kcoral.tasks.packs import values
from kcoral.tasks.packs.problem import PackProblem

#: the seed both models are built under (their parameters must be the same)
INIT_SEED = 42
TOLERANCE_RULE = (
    "KernelBench's rule: every element of every output satisfies |out - ref| <= atol + rtol * |ref| "
    "(torch.allclose), the shapes equal, no NaN or inf"
)

HOLDOUT_RULE = (
    "{n} secret probes per request: fresh draws of the problem's own get_inputs() under seeds drawn from the "
    "server's key (its shapes are the problem's). They run first; a failed probe is reported as PASS/FAIL only, "
    "and the evaluation then has no score."
)


class KernelBenchProblem(PackProblem):
    """One problem file's task functions; the file is imported (run) on first use only."""

    tolerance_rule = TOLERANCE_RULE
    holdout_rule = HOLDOUT_RULE

    def __init__(self, root: Path, manifest: dict[str, Any]) -> None:
        self.path = root / manifest["pack"]["entry"]
        super().__init__(manifest["pack"])
        self._module: ModuleType | None = None
        self._models: dict[str, Any] = {}

    def problem(self) -> ModuleType:
        """The problem file, imported once."""
        if self._module is None:
            spec = importlib.util.spec_from_file_location(f"kcoral_problem_{self.path.stem}", self.path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self._module = module
        return self._module

    def build(self, cls: Any, device: str) -> Any:
        """``cls(*get_init_inputs())`` built under INIT_SEED, on ``device``, in eval mode."""
        import torch  # noqa: PLC0415

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(INIT_SEED)
            init = list(self.problem().get_init_inputs())
            torch.manual_seed(INIT_SEED)
            model = cls(*init)
        return model.to(device).eval() if isinstance(model, torch.nn.Module) else model

    def _reference_model(self, device: str) -> Any:
        if device not in self._models:
            self._models[device] = self.build(self.problem().Model, device)
        return self._models[device]

    # --- the task module's functions ------------------------------------------------------------

    def make_inputs(self, params: dict[str, Any], seed: int, device: str) -> dict[str, Any]:
        import torch  # noqa: PLC0415

        with torch.random.fork_rng(devices=[]), torch.device(device):  # drawn where they are used: no copy
            torch.manual_seed(seed)
            drawn = list(self.problem().get_inputs())
        data: dict[str, Any] = {}
        for i, value in enumerate(drawn):
            if isinstance(value, torch.Tensor):
                data[f"in{i}"] = value.to(device).contiguous()
            elif value is None or isinstance(value, bool | int | float | str):
                data[f"in{i}"] = value
            else:
                raise ValueError(f"get_inputs()[{i}] is a {type(value).__name__}, not a tensor or a number")
        return data

    def reference(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        import torch  # noqa: PLC0415

        device = next((v.device.type for v in inputs.values() if isinstance(v, torch.Tensor)), "cpu")
        with torch.no_grad():
            result = self._reference_model(device)(*_args(inputs, clone=True))
        return values.as_outputs(result)

    def baseline(self, data: dict[str, Any]) -> Callable[[], None]:
        return self._runner(self.build(self.problem().Model, _device(data)), data)

    def candidate(self, module: Any, data: dict[str, Any]) -> Callable[[], None]:
        cls = getattr(module, "ModelNew", None)
        if cls is None:
            raise AttributeError("the submission defines no ModelNew")
        device = _device(data)
        model = self.build(cls, device)
        problem = same_state(self.build(self.problem().Model, device), model)
        if problem:
            raise ValueError(f"ModelNew(*get_init_inputs()) built under the problem's seed is not Model's: {problem}")
        return self._runner(model, data)

    def holdout_params(self, rng: random.Random, count: int) -> list[dict[str, Any]]:
        """Fresh draws of the problem's own inputs (the seeds are the secret's; the shapes are fixed)."""
        return [{} for _ in range(count)]

    def template(self) -> str:
        """The native submission to start from: the problem file with Model renamed ModelNew."""
        return model_new(self.path.read_text())

    @staticmethod
    def _runner(model: Any, data: dict[str, Any]) -> Callable[[], None]:
        import torch  # noqa: PLC0415

        args = _args(data)
        outs = {k: v for k, v in data.items() if k.startswith("out")}

        def run() -> None:
            with torch.no_grad():
                values.write_outputs(model(*args), outs)

        return run


def same_state(reference: Any, candidate: Any) -> str:
    """ "" when ``candidate`` holds ``reference``'s parameters and buffers (same names, shapes, dtypes and
    values: KernelBench's models share their weights' seed), else the first difference. Checked where
    the candidate is built; its outputs are judged by the supervisor all the same."""
    import torch  # noqa: PLC0415

    def state(model: Any) -> dict[str, Any]:
        return dict(model.state_dict()) if isinstance(model, torch.nn.Module) else {}

    want, got = state(reference), state(candidate)
    missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    if missing or extra:
        return f"its parameters and buffers lack {missing[:5]} and add {extra[:5]}"
    for name, value in want.items():
        other = got[name]
        if tuple(other.shape) != tuple(value.shape) or other.dtype != value.dtype:
            return f"{name} is {other.dtype} {list(other.shape)}, Model's {value.dtype} {list(value.shape)}"
        if not torch.equal(other.detach().cpu(), value.detach().cpu()):
            return f"{name} holds other values than Model's (built from the same seed, they must be equal)"
    return ""


def model_new(source: str) -> str:
    """``source`` with every name token ``Model`` (the class, ``super(Model, self)``) made ``ModelNew``."""
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    lines = source.splitlines(keepends=True)
    for tok in reversed(tokens):  # from the end: earlier positions stay valid
        if tok.type == tokenize.NAME and tok.string == "Model":
            row, col = tok.start
            line = lines[row - 1]
            lines[row - 1] = line[:col] + "ModelNew" + line[col + len("Model") :]
    return "".join(lines)


def _args(data: dict[str, Any], clone: bool = False) -> list[Any]:
    """The forward's arguments: in0, in1, ... in order (cloned: the reference may write into them)."""
    names = sorted((k for k in data if k.startswith("in") and k[2:].isdigit()), key=lambda k: int(k[2:]))
    return [data[n].clone() if clone and hasattr(data[n], "clone") else data[n] for n in names]


def _device(data: dict[str, Any]) -> str:
    return next((v.device.type for v in data.values() if hasattr(v, "device")), "cpu")
