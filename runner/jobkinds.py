"""Job kinds: how each kind of job is checked at submit time and run on a lease.

``python`` is built in (one container step, runner.executor). Other kinds register a
:class:`JobKind` here: ``eval`` (tasks.evaluate), ``ncu`` and ``iket`` (profiling.jobs).
A kind's ``run`` gets a :class:`RunContext` and returns a RunResult; it runs its containers
through ``ctx.executor.run_step`` so every step gets the same sandbox, deadline and log budget.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kcoral.runner.errors import BadRequest
from kcoral.runner.executor import DockerExecutor, RunResult
from kcoral.runner.gpus import Nvml
from kcoral.runner.leases import Lease
from kcoral.runner.models import ImageInfo, JobSpec, JobView
from kcoral.runner.settings import Settings
from kcoral.runner.store import JobPaths

if TYPE_CHECKING:
    from kcoral.runner.services import Services

#: kcoral's own in-container code (harnesses, summaries) is mounted read-only here for kinds that need it
CODE_MOUNT = "/kcoral"
REPO_ROOT = Path(__file__).resolve().parents[1]


def code_mounts(*packages: str) -> dict[str, tuple[str, str]]:
    """Read-only mounts of kcoral packages ("tasks/harness") at /kcoral/kcoral/<package>: with /kcoral on
    PYTHONPATH they import as kcoral.tasks.harness, ... (kcoral is a namespace package there: nothing
    else of kcoral is in the container)."""
    return {str(REPO_ROOT / p): (f"{CODE_MOUNT}/kcoral/{p}", "ro") for p in packages}


@dataclass
class RunContext:
    job: JobView
    lease: Lease
    paths: JobPaths
    cancel: threading.Event
    executor: DockerExecutor
    settings: Settings
    on_image: Callable[[ImageInfo], None]
    started: float
    nvml: Nvml | None = None

    @property
    def deadline(self) -> float:
        return self.started + self.job.spec.timeout_s


class JobKind(Protocol):
    name: str

    def validate(self, spec: JobSpec, services: Services) -> None:
        """Raise BadRequest for a spec this kind cannot run here."""

    def run(self, ctx: RunContext) -> RunResult: ...


class PythonKind:
    name = "python"

    def validate(self, spec: JobSpec, services: Services) -> None:
        if not spec.argv:
            raise BadRequest("argv is empty: give a script, -c CODE or -m MODULE")

    def run(self, ctx: RunContext) -> RunResult:
        return ctx.executor.run(ctx.job, ctx.lease, ctx.paths, ctx.cancel, ctx.on_image)


#: kinds living in other packages, imported when first needed: name -> "module:attribute"
_PLUGINS = {"eval": "kcoral.tasks.evaluate:EvalKind", "ncu": "kcoral.profiling.jobs:NcuKind",
            "iket": "kcoral.profiling.jobs:IketKind"}
_KINDS: dict[str, JobKind] = {"python": PythonKind()}


def kind_for(name: str) -> JobKind:
    if name not in _KINDS and name in _PLUGINS:
        module, attr = _PLUGINS[name].split(":")
        try:
            _KINDS[name] = getattr(importlib.import_module(module), attr)()
        except (ImportError, AttributeError):
            raise BadRequest(f"job kind {name!r} is not available on this server") from None
    if name not in _KINDS:
        raise BadRequest(f"unknown job kind {name!r}; this server runs: {', '.join(sorted({*_KINDS, *_PLUGINS}))}")
    return _KINDS[name]


def run_job(ctx: RunContext) -> RunResult:
    return kind_for(ctx.job.spec.kind).run(ctx)

