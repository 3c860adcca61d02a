"""Loading a task definition: a directory with ``manifest.json`` and ``task.py``.

``task.py`` imports torch only inside its functions, so the server (which may have no torch)
can import it to draw holdout parameters. What a task module provides:

    make_inputs(params, seed, device) -> dict[str, Tensor | int]   inputs, generated deterministically
    make_outputs(inputs, device) -> dict[str, Tensor]               output buffers (the harness poisons them)
    output_specs(inputs) -> dict[str, (shape, dtype)]                what each output must look like
    signature(params) -> {"inputs", "scalars", "outputs"}           data's contents for params, without torch
    reference(inputs, params) -> dict[str, Tensor]                  expected outputs (judge only)
    baseline(data) -> Callable[[], None]                            the timed baseline, writes data's outputs
    candidate(module, data) -> Callable[[], None]                   calls the submission's setup
    holdout_params(rng: random.Random, count) -> list[dict]         secret-driven probe recipes

A problem pack's task (tasks.packs) has no task.py: its manifest's ``pack`` names the format, whose
adapter (tasks.packs.adapters) provides the same functions over the problem's own code.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: an evaluation's time limit when the manifest names none
DEFAULT_TIMEOUT_S = 600.0
#: a dotted module name (the manifest's ``preload``)
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


@dataclass(frozen=True)
class Task:
    root: Path
    manifest: dict[str, Any]

    @property
    def id(self) -> str:
        return self.manifest["id"]

    @property
    def inputs_read_only(self) -> bool:
        """A submission that writes into its inputs fails (manifest ``inputs_read_only``); else it is
        told so in the report and judged on its outputs."""
        return bool(self.manifest.get("inputs_read_only", False))

    @property
    def device(self) -> str:
        return self.manifest.get("device", "cpu")

    @property
    def gpu_types(self) -> tuple[str, ...]:
        """The GPU types the task runs on (manifest ``gpu_types``, short NVML types such as B200); empty:
        any GPU (tasks.packs.manifest: a pack's kcoral-pack.json says so for its problems)."""
        return tuple(self.manifest.get("gpu_types") or ())

    @property
    def pack(self) -> dict[str, Any] | None:
        """A problem pack's entry (tasks.packs.manifest); None for a task of kcoral's own."""
        pack = self.manifest.get("pack")
        return pack if isinstance(pack, dict) else None

    def module(self) -> Any:
        """The task module (task.py), or a pack problem's adapter with the same functions."""
        if self.pack is not None:
            from kcoral.tasks.packs.adapters import bind  # noqa: PLC0415 - only a pack's task needs it

            return bind(self.root, self.manifest)
        spec = importlib.util.spec_from_file_location(f"kcoral_task_{self.id.replace('/', '_')}", self.root / "task.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def content_hash(self) -> str:
        """sha256 over the task's files (names and bytes), so a receipt pins the task version."""
        h = hashlib.sha256()
        if self.pack is not None:  # its files (a KernelBench folder holds many problems), and how it is adapted
            adapted = {**self.manifest, "pack": {k: v for k, v in self.pack.items() if k != "shapes"}}
            h.update(json.dumps(adapted, sort_keys=True).encode() + b"\0")
            for name in self.pack.get("files", []):
                h.update(name.encode() + b"\0")
                h.update((self.root.parent / name).read_bytes())
            return h.hexdigest()
        for path in sorted(p for p in self.root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            h.update(str(path.relative_to(self.root)).encode() + b"\0")
            h.update(path.read_bytes())
        return h.hexdigest()

    def public(self) -> dict[str, Any]:
        m = self.manifest
        return {
            "id": m["id"],
            "version": m.get("version", ""),
            "description": m.get("description", ""),
            "device": self.device,
            "workloads": [w["id"] for w in m["workloads"]],
            "timed": [w["id"] for w in m["workloads"] if w.get("timed")],
            "holdout_probes": m.get("holdout", {}).get("count", 0),
            "contract": m.get("contract", ""),
            "timeout_s": self.timeout_s,
            **({"format": self.pack.get("format", "")} if self.pack is not None else {}),
        }

    @property
    def preload(self) -> tuple[str, ...]:
        """Modules every worker imports before the submission may run (the manifest's ``preload``: what
        the template imports, e.g. ``fla.ops.kda``): the candidate's worker imports them while the
        supervisor's warm-up runs, instead of after it. Trusted packages of the image only; a name
        that is not a dotted module name is left out."""
        names = self.manifest.get("preload", [])
        if not isinstance(names, list):
            return ()
        return tuple(n for n in names if isinstance(n, str) and _MODULE.fullmatch(n))

    @property
    def timeout_s(self) -> float:
        """The longest an evaluation of this task may take (its manifest's ``timeout_s``)."""
        return float(self.manifest.get("timeout_s", DEFAULT_TIMEOUT_S))


def load_task(root: Path) -> Task:
    return Task(root, json.loads((root / "manifest.json").read_text()))
