"""The ``ncu`` and ``iket`` job kinds (runner.jobkinds imports them by name).

Each job is one hardened container step in the job image: the sent directory read-only as the
working directory, kcoral's ``profiling`` package read-only at /kcoral/profiling (PYTHONPATH=/kcoral),
and :mod:`profiling.run_tool` as the command, which runs the tool, does the follow-up (the ncu
summary; moving run-iket's files into /job/out) and exits with the tool's code. Outputs are
collected exactly as for a python job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kcoral.profiling import capabilities, iket, ncu
from kcoral.runner.envpolicy import job_environment
from kcoral.runner.errors import BadRequest, InfrastructureError
from kcoral.runner.executor import RunResult
from kcoral.runner.jobkinds import CODE_MOUNT, RunContext, code_mounts
from kcoral.runner.models import JobSpec, Verdict
from kcoral.runner.sandbox import INPUT_MOUNT, ContainerStep

if TYPE_CHECKING:
    from kcoral.runner.services import Services
    from kcoral.runner.settings import Settings


def profiling_env(settings: Settings, spec: JobSpec, job_id: str, extra: dict[str, str] | None = None
                  ) -> dict[str, str]:
    env = job_environment(settings.job_env, spec.env, job_id)
    env["PYTHONPATH"] = ":".join(p for p in (CODE_MOUNT, env.get("PYTHONPATH", "")) if p)
    env.update(extra or {})
    return env


def _check_runnable(spec: JobSpec, services: Services, what: str, info: dict[str, Any]) -> None:
    if not info.get("ok"):
        raise BadRequest(f"this server cannot run {what} jobs: {info.get('reason') or 'not available'}")
    if spec.gpus < 1:
        raise BadRequest(f"{what} jobs need a GPU: ask for --gpus 1 or more")
    if not services.gpus:
        raise BadRequest(f"this server cannot run {what} jobs: it has no GPUs")


def _run_step(ctx: RunContext, command: list[str], extra_env: dict[str, str] | None, name: str) -> RunResult:
    settings, job, paths = ctx.settings, ctx.job, ctx.paths
    image = job.spec.image or capabilities.profiler_image(settings, name)  # a rerun names the image digest it ran on
    try:
        ctx.on_image(ctx.executor.image_info(image))
        step = ContainerStep(
            image=image,
            command=command,
            env=profiling_env(settings, job.spec, job.id, extra_env),
            mounts={str(paths.input): (INPUT_MOUNT, "ro"), **code_mounts("profiling")},
            output_dir=paths.raw_out,
            name=name,
        )
        outcome = ctx.executor.run_step(job.id, step, ctx.lease, ctx.deadline, ctx.cancel, paths.log)
    except InfrastructureError as exc:
        return RunResult(Verdict.infrastructure_error, reason=exc.message)
    return ctx.executor.collect_step(outcome, paths)


class _ProfilerKind:
    """A job that runs one profiler around the client's command; subclasses name the tool."""

    name = ""
    env: dict[str, str] = {}

    def check_options(self, spec: JobSpec) -> None:
        raise NotImplementedError

    def build(self, python: str, spec: JobSpec, tool: str) -> list[str]:
        raise NotImplementedError

    def validate(self, spec: JobSpec, services: Services) -> None:
        try:
            self.check_options(spec)
        except (ncu.NcuOptionError, iket.IketOptionError) as exc:
            raise BadRequest(str(exc)) from None
        caps = capabilities.for_server(services.settings, services.executor.has_image)
        _check_runnable(spec, services, self.name, caps[self.name])

    def command(self, settings: Settings, spec: JobSpec) -> list[str]:
        """The container's command: the host's tool in toolchain mode, the image's on its PATH otherwise."""
        tool = capabilities.tool_path(settings, self.name)
        return self.build(settings.python, spec, tool)

    def run(self, ctx: RunContext) -> RunResult:
        return _run_step(ctx, self.command(ctx.settings, ctx.job.spec), dict(self.env) or None, self.name)


class NcuKind(_ProfilerKind):
    """``kcoral ncu``: argv = ncu options, command = the profiled command."""

    name = "ncu"

    def check_options(self, spec: JobSpec) -> None:
        ncu.normalise_ncu_options(spec.argv)
        ncu.check_command(spec.command)

    def build(self, python: str, spec: JobSpec, tool: str) -> list[str]:
        return ncu.driver_command(python, ncu.build_ncu_command(spec.argv, spec.command, tool))


class IketKind(_ProfilerKind):
    """``kcoral iket``: argv = [run-iket options] profile [profile options], command = the traced command."""

    name = "iket"
    env = dict(iket.IKET_ENV)

    def check_options(self, spec: JobSpec) -> None:
        iket.split_iket_argv(spec.argv)
        iket.check_command(spec.command)

    def build(self, python: str, spec: JobSpec, tool: str) -> list[str]:
        return iket.driver_command(python, iket.build_iket_command(spec.argv, spec.command, tool))
