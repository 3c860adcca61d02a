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

import hashlib
import importlib.util
import io
import json
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
#: a parameter's or buffer's name, dtype, shape and values' SHA-256 (describe_state)
StateEntry = tuple[str, str, list[int], str]
#: the most parameters and buffers a model's description may list, and the most bytes of it a worker's
#: answer carries (tasks.harness.channel.MAX_MESSAGE is 64 KiB; beyond it only the digest goes)
MAX_STATE_ENTRIES, MAX_STATE_BYTES = 2_000, 48 << 10
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
        self._state: list[StateEntry] | None = None
        #: the numbers among get_inputs()'s values, drawn once (:meth:`_numbers`)
        self._fixed: dict[str, Any] | None = None

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
        if len(data) > sum(isinstance(v, torch.Tensor) for v in data.values()):
            data.update(self._numbers())
        return data

    def _numbers(self) -> dict[str, Any]:
        """The numbers among get_inputs()'s values as drawn under INIT_SEED, the same in every draw: a worker
        is given them once per case (a problem that draws a number with its tensors would otherwise be
        judged on a number its calls never saw)."""
        import torch  # noqa: PLC0415

        if self._fixed is None:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(INIT_SEED)
                drawn = list(self.problem().get_inputs())
            self._fixed = {f"in{i}": v for i, v in enumerate(drawn) if not isinstance(v, torch.Tensor)}
        return self._fixed

    def reference(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        import torch  # noqa: PLC0415

        device = next((v.device.type for v in inputs.values() if isinstance(v, torch.Tensor)), "cpu")
        with torch.no_grad():
            result = self._reference_model(device)(*_args(inputs, clone=True))
        return values.as_outputs(result)

    def baseline(self, data: dict[str, Any]) -> Callable[[], None]:
        return self._runner(self.build(self.problem().Model, _device(data)), data)

    def candidate(self, module: Any, data: dict[str, Any]) -> Callable[[], None]:
        """The ModelNew's runner, carrying what its parameters and buffers are (``STATE_ATTRIBUTE``: names, dtypes,
        shapes, digests of the values), which the worker hands the supervisor with its setup's answer:
        :meth:`check_state` compares it with Model's there, outside the candidate's process."""
        from kcoral.tasks.harness.schema import STATE_ATTRIBUTE  # noqa: PLC0415 - in a worker (not the inspector's image)

        cls = getattr(module, "ModelNew", None)
        if cls is None:
            raise AttributeError("the submission defines no ModelNew")
        model = self.build(cls, _device(data))
        run = self._runner(model, data)
        setattr(run, STATE_ATTRIBUTE, state_report(model))
        return run

    def check_state(self, said: object) -> str:
        """ "" when the state the candidate's worker reported is Model's (built here under the same seed),
        else the reason the candidate is refused before any call."""
        if self._state is None:  # the reference's model where the supervisor built one, else on the CPU
            built = next(iter(self._models.values()), None)
            self._state = describe_state(self._reference_model("cpu") if built is None else built)
        problem = state_difference(self._state, said)
        return problem and f"ModelNew(*get_init_inputs()) built under the problem's seed is not Model's: {problem}"

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


def describe_state(model: Any) -> list[StateEntry]:
    """``model``'s parameters and buffers (none for a callable that is not a module): name, dtype,
    shape and the SHA-256 of the values' bytes, by name."""
    import torch  # noqa: PLC0415

    if not isinstance(model, torch.nn.Module):
        return []
    entries = []
    for name, value in sorted(model.state_dict().items()):
        raw = value.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8)
        digest = hashlib.sha256(raw.numpy().tobytes()).hexdigest()
        entries.append((name, str(value.dtype).removeprefix("torch."), list(value.shape), digest))
    return entries


def state_digest(entries: list[StateEntry] | list[list[Any]]) -> str:
    """One SHA-256 of a whole description (what two models' states share when they are the same)."""
    return _digest(_text(entries))


def state_report(model: Any) -> dict[str, Any]:
    """What the candidate's worker says of its model: the description's digest, and the description
    itself where it fits in a message (tasks.harness.channel's limit), to name the first difference."""
    entries = describe_state(model)
    text = _text(entries)
    return {"digest": _digest(text), "entries": entries if len(text) <= MAX_STATE_BYTES else None}


def _text(entries: list[StateEntry] | list[list[Any]]) -> str:
    return json.dumps(entries, separators=(",", ":"))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def state_difference(want: list[StateEntry], said: object) -> str:
    """ "" when ``said`` (the candidate's worker's :func:`state_report`, read as hostile input) describes
    ``want``, else the first difference: names lacking or added, a dtype or shape, values (KernelBench's
    models share their weights' seed, so they must be equal)."""
    if not isinstance(said, dict) or not isinstance(said.get("digest"), str):
        return "its worker did not say what its parameters and buffers are"
    if said["digest"] == state_digest(want):
        return ""
    entries = said.get("entries")
    if not isinstance(entries, list) or len(entries) > MAX_STATE_ENTRIES or not all(map(_is_entry, entries)):
        return f"its {len(want)} parameters and buffers are not Model's (too many to name the first difference)"
    got = {e[0]: e for e in entries}
    wanted = {e[0]: e for e in want}
    missing, extra = sorted(set(wanted) - set(got)), sorted(set(got) - set(wanted))
    if missing or extra:
        return f"its parameters and buffers lack {missing[:5]} and add {extra[:5]}"
    for name, (_, dtype, shape, digest) in wanted.items():
        _, other_dtype, other_shape, other_digest = got[name]
        if other_dtype != dtype or other_shape != shape:
            return f"{name} is {other_dtype} {other_shape}, Model's {dtype} {shape}"
        if other_digest != digest:
            return f"{name} holds other values than Model's (built from the same seed, they must be equal)"
    return "its parameters and buffers are not Model's (its description and its digest disagree)"


def _is_entry(entry: object) -> bool:
    return (
        isinstance(entry, list)
        and len(entry) == 4
        and all(isinstance(entry[i], str) and len(entry[i]) <= 300 for i in (0, 1, 3))
        and isinstance(entry[2], list)
        and len(entry[2]) <= 64
        and all(type(d) is int for d in entry[2])
    )


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
