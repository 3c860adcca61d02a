"""A GPU MODE reference-kernels problem folder as a kcoral task module.

The problem's own code does the work, imported as its harness does: the problem's folder and its
pack's folder (the shared ``utils.py``) first on the path, ``reference.py`` imported as
``reference``. Inputs: ``generate_input(**spec)`` for a workload's spec (task.yml's ``tests`` keep their
published seeds; ``benchmarks`` and holdout probes get seeds the supervisor draws), flattened to
``in0``, ... with its structure in the ``tree`` scalar (tasks.packs.values), rebuilt around a worker's
buffers. Reference and baseline: ``ref_kernel(data)``; the candidate: the submission's
``custom_kernel(data)``; both results copied into the supervisor's buffers by the worker. Judged by
the problem's ``check_implementation(data, output)``, run by the supervisor on its own copy
(:meth:`GpuModeProblem.check`).
"""

from __future__ import annotations

import importlib
import random
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from kcoral.tasks.packs import values
from kcoral.tasks.packs.problem import PackProblem

TOLERANCE_RULE = "the problem's own check_implementation(data, output), run by the supervisor on its copy of data"
HOLDOUT_RULE = (
    "{n} secret probes per request: specs of the problem's benchmarks, chosen and seeded from the server's key. "
    "They run first; a failed probe is reported as PASS/FAIL only, and the evaluation then has no score."
)
#: a seed the problem's generate_input takes (it may hand it to torch.Generator.manual_seed)
SEED_RANGE = 2**31


class GpuModeProblem(PackProblem):
    """One problem folder's task functions; its code is imported on first use only."""

    tolerance_rule = TOLERANCE_RULE
    holdout_rule = HOLDOUT_RULE

    def __init__(self, root: Path, manifest: dict[str, Any]) -> None:
        self.root = root
        super().__init__(manifest["pack"])
        self.workloads = manifest["workloads"]
        self._module: ModuleType | None = None
        self._preallocated: dict[Any, tuple[str, ...]] = {}
        #: the container ref_kernel returns its outputs in (tuple or list), None for one bare value:
        #: check_implementation gets the candidate's outputs in the same form, a 1-tuple included
        self._form: type[tuple[Any, ...]] | type[list[Any]] | None = None

    def importable(self) -> None:
        """The problem's folder, then its pack's, first on the import path (as its harness lays them out)."""
        for folder in (str(self.root.parent), str(self.root)):
            if folder not in sys.path:
                sys.path.insert(0, folder)

    def problem(self) -> ModuleType:
        """reference.py, imported once as ``reference``."""
        if self._module is None:
            self.importable()
            mine = (self.root.resolve(), self.root.parent.resolve())
            for name in ("reference", "task", "utils"):  # another problem's, imported before in this process
                module = sys.modules.get(name)
                if module is not None and Path(getattr(module, "__file__", "") or "/").resolve().parent not in mine:
                    del sys.modules[name]
            self._module = importlib.import_module("reference")
            if Path(self._module.__file__ or "").resolve().parent != self.root.resolve():
                raise ImportError(f"'reference' is {self._module.__file__}, not the problem's reference.py")
        return self._module

    def make_inputs(self, params: dict[str, Any], seed: int, device: str) -> dict[str, Any]:
        """The problem's data for ``params`` under ``seed`` (a test's own seed where its spec has one), its
        preallocated outputs poisoned (:meth:`preallocated`): a call that does not write them returns NaN."""
        spec = {**params}
        spec.setdefault("seed", seed % SEED_RANGE)
        tree, leaves = values.flatten(self.problem().generate_input(**spec), "in")
        data = {**{k: v.contiguous() for k, v in leaves.items()}, values.TREE: tree}
        for name in self.preallocated(data):
            data[name].fill_(float("nan")) if data[name].is_floating_point() else data[name].fill_(-1)
        return data

    def preallocated(self, data: dict[str, Any]) -> tuple[str, ...]:
        """The inputs that ref_kernel returns as (part of) its result: the preallocated outputs a problem's
        data holds. Found once per data layout, by a reference run on a copy."""
        tensors = {k: v for k, v in data.items() if k != values.TREE}
        if any(t.device.type == "meta" for t in tensors.values()):
            return ()  # no storage to compare (the inspection's shapes only)
        key = (repr(data[values.TREE]), tuple((k, tuple(t.shape), str(t.dtype)) for k, t in tensors.items()))
        if key not in self._preallocated:
            copies = {k: t.clone() for k, t in tensors.items()}
            result = self.problem().ref_kernel(values.unflatten(data[values.TREE], copies))
            outs = values.as_outputs(result).values()
            self._preallocated[key] = tuple(
                k for k, t in copies.items() if any(o.data_ptr() == t.data_ptr() and o.numel() for o in outs)
            )
        return self._preallocated[key]

    def reference(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        """ref_kernel on a copy (a problem's data often holds a preallocated output it writes into)."""
        result = self.problem().ref_kernel(self._data(inputs, clone=True))
        self._form = type(result) if isinstance(result, tuple | list) else None
        return values.as_outputs(result)

    def check(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> str:
        """The problem's check_implementation on a copy of the inputs: "" when it passes, else its reason."""
        result = list(outputs.values())
        form = self._form or (tuple if len(result) > 1 else None)
        got = self.problem().check_implementation(self._data(inputs, clone=True), form(result) if form else result[0])
        if isinstance(got, tuple):  # (passed, message)
            return "" if got[0] else str(got[1] if len(got) > 1 else "check_implementation failed")
        return "" if got in (True, "", None) else str(got)

    def baseline(self, data: dict[str, Any]) -> Callable[[], None]:
        return self._runner(self.problem().ref_kernel, data)

    def candidate(self, module: Any, data: dict[str, Any]) -> Callable[[], None]:
        kernel = getattr(module, "custom_kernel", None)
        if not callable(kernel):
            raise AttributeError("the submission defines no custom_kernel(data)")
        return self._runner(kernel, data)

    def holdout_params(self, rng: random.Random, count: int) -> list[dict[str, Any]]:
        """The benchmarks' specs, chosen by the secret (each probe's seed is the secret's too)."""
        specs = [w["params"] for w in self.workloads if w.get("timed")]
        return [dict(rng.choice(specs)) for _ in range(count)]

    def template(self) -> str:
        """The problem's own Python template (task.yml's ``templates``), else a submission that fails."""
        name = self.pack.get("templates", {}).get("Python", "")
        path = (self.root / name).resolve() if name else None
        if path is not None and path.is_relative_to(self.root.parent.resolve()) and path.is_file():
            return path.read_text()
        return GENERATED_TEMPLATE

    def _data(self, inputs: dict[str, Any], clone: bool = False) -> Any:
        leaves = {k: (v.clone() if clone else v) for k, v in inputs.items() if k != values.TREE and hasattr(v, "clone")}
        return values.unflatten(inputs[values.TREE], leaves)

    def _runner(self, kernel: Callable[[Any], Any], data: dict[str, Any]) -> Callable[[], None]:
        outs = {k: v for k, v in data.items() if k.startswith("out")}
        problem_data = self._data(data)

        def run() -> None:
            values.write_outputs(kernel(problem_data), outs)

        return run


GENERATED_TEMPLATE = '''"""submission.py: custom_kernel(data) returns what reference.py's ref_kernel(data) returns."""

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    raise NotImplementedError("write the kernel")
'''
