"""A pack problem's task module: the adapter of its format, bound to the problem (tasks.harness.taskdef)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kcoral.tasks.packs.gpumode import GpuModeProblem
from kcoral.tasks.packs.kernelbench import KernelBenchProblem

ADAPTERS: dict[str, type[KernelBenchProblem] | type[GpuModeProblem]] = {
    "kernelbench": KernelBenchProblem,
    "gpumode": GpuModeProblem,
}


def bind(root: Path, manifest: dict[str, Any]) -> KernelBenchProblem | GpuModeProblem:
    """The adapter of the manifest's pack format over the problem in ``root``."""
    fmt = manifest["pack"].get("format")
    if fmt not in ADAPTERS:
        raise ValueError(f"task {manifest.get('id', '?')}: no adapter for the pack format {fmt!r}")
    return ADAPTERS[fmt](root, manifest)
