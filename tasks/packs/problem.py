"""What the two formats' adapters share (tasks.packs.kernelbench, tasks.packs.gpumode): the outputs'
shapes and dtypes from one reference run per input layout, outputs made from them, and the problem's
signature as the server's inspection recorded it."""

from __future__ import annotations

from typing import Any

from kcoral.tasks.packs import values

#: an output's shape and dtype name, by output name
Specs = dict[str, tuple[tuple[int, ...], str]]


class PackProblem:
    """A pack problem's task functions common to both formats; a format's adapter adds the rest."""

    def __init__(self, pack: dict[str, Any]) -> None:
        self.pack = pack
        self._specs: dict[Any, Specs] = {}

    def reference(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def output_specs(self, inputs: dict[str, Any]) -> Specs:
        """From one reference run per distinct layout of the inputs."""
        key = tuple(
            (k, tuple(getattr(v, "shape", ())), str(getattr(v, "dtype", type(v).__name__)))
            for k, v in inputs.items()
            if k != values.TREE
        )
        if key not in self._specs:
            self._specs[key] = values.specs(self.reference(inputs, {}))
        return self._specs[key]

    def make_outputs(self, inputs: dict[str, Any], device: str) -> dict[str, Any]:
        import torch  # noqa: PLC0415

        return {
            name: torch.empty(shape, dtype=getattr(torch, dtype), device=device)
            for name, (shape, dtype) in self.output_specs(inputs).items()
        }

    def signature(self, params: dict[str, Any]) -> dict[str, Any]:
        """What data holds, as inspected (tasks.packs.inspect; the server puts it in the manifest)."""
        for entry in self.pack.get("shapes", []):
            if entry.get("params") == params:
                return {k: entry[k] for k in ("inputs", "scalars", "outputs")}
        raise ValueError("this problem has not been inspected (its inputs' shapes are known once it has run)")
