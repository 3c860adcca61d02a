"""The ``ncu``, ``iket``, ``sanitizer``, ``timeline`` and ``proton`` job kinds (runner.jobkinds imports them by name).

Each job is one hardened container in the profiler's image: the sent directory read-only as the
working directory, kcoral's ``profiling`` package read-only (kcoral.profiling, /kcoral on PYTHONPATH),
and :mod:`profiling.run_tool` as the command, which runs the tool, does the follow-up (the ncu
summary; moving run-iket's files into /job/out; counting compute-sanitizer's errors) and exits with
the tool's code (a sanitizer job that found errors: profiling.sanitizer_findings.ERRORS_EXIT). A proton
job runs :mod:`profiling.proton_run` instead, the job's python starting Proton around the client's script,
in the job image. Its exit code decides and its outputs are collected, as for a python job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kcoral.profiling import capabilities, gputrace, iket, ncu, proton, sanitizer
from kcoral.profiling.toolargs import ToolOptionError
from kcoral.protocol.errors import BadRequest
from kcoral.protocol.jobenv import INPUT_MOUNT
from kcoral.protocol.models import JobKindName, ProfileSpec, SpecBase
from kcoral.runner.envpolicy import job_environment
from kcoral.runner.jobkinds import HostFacts, code_mounts, spec_as, with_code_path
from kcoral.runner.plan import ContainerStep, JobContext, Plan

if TYPE_CHECKING:
    from kcoral.runner.settings import Settings


def profiling_env(
    settings: Settings, spec: ProfileSpec, job_id: str, extra: dict[str, str] | None = None
) -> dict[str, str]:
    return {**with_code_path(job_environment(settings.operator_env(), spec.env, job_id)), **(extra or {})}


def _check_runnable(spec: ProfileSpec, host: HostFacts, what: str, info: dict[str, Any]) -> None:
    if not info.get("ok"):
        raise BadRequest(f"this server cannot run {what} jobs: {info.get('reason') or 'not available'}")
    if spec.gpus < 1:
        raise BadRequest(f"{what} jobs need a GPU: ask for --gpus 1 or more")
    if not host.gpus:
        raise BadRequest(f"this server cannot run {what} jobs: it has no GPUs")


class _ProfilerKind:
    """A job that runs one profiler around the client's command; subclasses name the tool."""

    name: JobKindName
    env: dict[str, str] = {}

    def check_options(self, spec: ProfileSpec) -> None:
        raise NotImplementedError

    def build(self, python: str, spec: ProfileSpec, tool: str) -> list[str]:
        raise NotImplementedError

    def validate(self, spec: SpecBase, host: HostFacts) -> SpecBase:
        profile = spec_as(spec, ProfileSpec)
        try:
            self.check_options(profile)
        except ToolOptionError as exc:
            raise BadRequest(str(exc)) from None
        caps = capabilities.for_server(host.settings, host.has_image)
        _check_runnable(profile, host, self.name, caps[self.name])
        return spec

    def command(self, settings: Settings, spec: ProfileSpec) -> list[str]:
        """The container's command: the host's tool in toolchain mode, the image's on its PATH otherwise."""
        tool = capabilities.tool_path(settings, self.name)
        return self.build(settings.python, spec, tool)

    def plan(self, ctx: JobContext) -> Plan:
        settings, job, paths = ctx.settings, ctx.job, ctx.paths
        spec = spec_as(job.spec, ProfileSpec)
        step = ContainerStep(
            command=self.command(settings, spec),
            env=profiling_env(settings, spec, job.id, dict(self.env)),
            mounts={str(paths.input): (INPUT_MOUNT, "ro"), **code_mounts(settings.data_dir, "profiling")},
            output_dir=paths.raw_out,
            name=self.name,
        )
        image = spec.image or capabilities.profiler_image(settings, self.name)  # a rerun: the digest it ran on
        return Plan(image=image, steps=[step], collect=paths.raw_out)


class NcuKind(_ProfilerKind):
    """``kcoral ncu``: argv = ncu options, command = the profiled command."""

    name = JobKindName.ncu

    def check_options(self, spec: ProfileSpec) -> None:
        ncu.normalise_ncu_options(spec.argv)
        ncu.check_command(spec.command)

    def build(self, python: str, spec: ProfileSpec, tool: str) -> list[str]:
        return ncu.driver_command(python, ncu.build_ncu_command(spec.argv, spec.command, tool))


class IketKind(_ProfilerKind):
    """``kcoral iket``: argv = [run-iket options] profile [profile options], command = the traced command."""

    name = JobKindName.iket
    env = dict(iket.IKET_ENV)

    def check_options(self, spec: ProfileSpec) -> None:
        iket.split_iket_argv(spec.argv)
        iket.check_command(spec.command)

    def build(self, python: str, spec: ProfileSpec, tool: str) -> list[str]:
        return iket.driver_command(python, iket.build_iket_command(spec.argv, spec.command, tool))


class SanitizerKind(_ProfilerKind):
    """``kcoral sanitizer``: argv = compute-sanitizer options, command = the checked command."""

    name = JobKindName.sanitizer

    def check_options(self, spec: ProfileSpec) -> None:
        sanitizer.normalise_options(spec.argv)
        sanitizer.check_command(spec.command)

    def build(self, python: str, spec: ProfileSpec, tool: str) -> list[str]:
        return sanitizer.driver_command(python, sanitizer.build_command(spec.argv, spec.command, tool))


class TimelineKind(_ProfilerKind):
    """``kcoral timeline``: argv = the recorder's options, command = the recorded Python command; the job's
    Python runs it under torch.profiler (profiling.gputrace_record), no run_tool around it."""

    name = JobKindName.timeline

    def check_options(self, spec: ProfileSpec) -> None:
        gputrace.normalise_options(spec.argv)
        gputrace.check_command(spec.command)

    def build(self, python: str, spec: ProfileSpec, tool: str) -> list[str]:
        return gputrace.build_command(spec.argv, spec.command, python)


class ProtonKind(_ProfilerKind):
    """``kcoral proton``: argv = kcoral's Proton options, command = the Python command; the tool is the job's
    python (the host's in toolchain mode), whose triton has Proton."""

    name = JobKindName.proton

    def check_options(self, spec: ProfileSpec) -> None:
        proton.normalise_options(spec.argv)
        proton.check_command(spec.command)

    def build(self, python: str, spec: ProfileSpec, tool: str) -> list[str]:
        return proton.build_command(spec.argv, spec.command, tool)
