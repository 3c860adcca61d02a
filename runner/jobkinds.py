"""Job kinds: how each kind of job is checked at submit time and what it runs.

A kind has two methods: ``validate`` (at submit time: a BadRequest for a spec this server cannot
run) and ``plan`` (at run time: a runner.plan.Plan, the containers and how their outcomes become
the result; runner.runplan runs it). ``python`` lives here; ``eval`` (tasks.evaluate), ``ncu``,
``iket``, ``sanitizer`` and ``proton`` (profiling.jobs) are imported when first needed, so a server without
their packages still runs python jobs. Adding a kind: one module with the class, one line in ``_PLUGINS``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from kcoral.protocol.errors import BadRequest, InfrastructureError
from kcoral.protocol.jobenv import INPUT_MOUNT
from kcoral.protocol.models import GpuInfo, JobKindName, PythonSpec, SpecBase
from kcoral.runner.codecopy import code_root
from kcoral.runner.envpolicy import job_environment
from kcoral.runner.plan import ContainerStep, JobContext, Plan
from kcoral.runner.settings import Settings
from kcoral.runner.store import JobPaths


@dataclass(frozen=True)
class HostFacts:
    """What a job kind may read of the server when it checks a spec (:meth:`JobKind.validate`): its
    settings, the GPUs it serves, and whether an image is present (the profilers' own). Not the
    server's services: a kind cannot reach the store, the scheduler or the engine from here."""

    settings: Settings
    gpus: tuple[GpuInfo, ...]
    has_image: Callable[[str], bool]


#: kcoral's own in-container code (harnesses, summaries) is mounted read-only below here
CODE_MOUNT = "/kcoral"


def code_mounts(data_dir: Path, *packages: str) -> dict[str, tuple[str, str]]:
    """Read-only mounts of kcoral packages ("tasks/harness") at /kcoral/kcoral/<package>, from their
    copy in the data dir (runner.codecopy): with /kcoral on PYTHONPATH they import as
    kcoral.tasks.harness, ... (kcoral is a namespace package there: nothing else of kcoral is in the
    container)."""
    root = code_root(data_dir)
    return {str(root / p): (f"{CODE_MOUNT}/kcoral/{p}", "ro") for p in packages}


def with_code_path(env: dict[str, str]) -> dict[str, str]:
    """``env`` with /kcoral first on PYTHONPATH (the operator's PYTHONPATH, e.g. a host directory
    holding a task's reference package, stays after it)."""
    return {**env, "PYTHONPATH": ":".join(p for p in (CODE_MOUNT, env.get("PYTHONPATH", "")) if p)}


S = TypeVar("S", bound=SpecBase)


def spec_as(spec: SpecBase, model: type[S]) -> S:
    """``spec`` as its kind's model (the registry is keyed by kind, so a mismatch is a server bug)."""
    if not isinstance(spec, model):
        raise InfrastructureError(f"a {type(spec).__name__} reached the kind that runs {model.__name__}")
    return spec


class JobKind(Protocol):
    name: JobKindName

    def validate(self, spec: SpecBase, host: HostFacts) -> SpecBase:
        """The spec as the job keeps it (with what the server decides filled in); BadRequest for a
        spec this kind cannot run here."""

    def plan(self, ctx: JobContext) -> Plan:
        """The containers to run for this job (may prepare files in the job's folder)."""


class PythonKind:
    """``kcoral python``: one container, the sent directory as its read-only working directory."""

    name = JobKindName.python

    def validate(self, spec: SpecBase, host: HostFacts) -> SpecBase:
        if not spec_as(spec, PythonSpec).argv:
            raise BadRequest("argv is empty: give a script, -c CODE or -m MODULE")
        return spec

    def plan(self, ctx: JobContext) -> Plan:
        settings, job, paths = ctx.settings, ctx.job, ctx.paths
        spec = spec_as(job.spec, PythonSpec)
        step = python_step(settings, paths, spec.argv, job_environment(settings.operator_env(), spec.env, job.id))
        return Plan(image=spec.image or settings.image, steps=[step], collect=paths.raw_out)


def python_step(settings: Settings, paths: JobPaths, argv: list[str], env: dict[str, str]) -> ContainerStep:
    """The container of a python job (and the shape a slot's standby is started in, runner.standby)."""
    return ContainerStep(
        command=[settings.python, *argv],
        env=env,
        mounts={str(paths.input): (INPUT_MOUNT, "ro")},
        output_dir=paths.raw_out,
    )


#: kinds living in other packages, imported when first needed: name -> "module:attribute"
_PLUGINS = {
    JobKindName.eval: "kcoral.tasks.evaluate:EvalKind",
    JobKindName.ncu: "kcoral.profiling.jobs:NcuKind",
    JobKindName.iket: "kcoral.profiling.jobs:IketKind",
    JobKindName.sanitizer: "kcoral.profiling.jobs:SanitizerKind",
    JobKindName.timeline: "kcoral.profiling.jobs:TimelineKind",
    JobKindName.proton: "kcoral.profiling.jobs:ProtonKind",
}
_KINDS: dict[str, JobKind] = {JobKindName.python: PythonKind()}


def kind_for(name: str) -> JobKind:
    if name not in _KINDS and name in _PLUGINS:
        module, attr = _PLUGINS[JobKindName(name)].split(":")
        try:
            _KINDS[name] = getattr(importlib.import_module(module), attr)()
        except (ImportError, AttributeError):
            raise BadRequest(f"job kind '{name}' is not available on this server") from None
    if name not in _KINDS:
        raise BadRequest(f"unknown job kind '{name}'; this server runs: {', '.join(sorted({*_KINDS, *_PLUGINS}))}")
    return _KINDS[name]
