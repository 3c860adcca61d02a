"""Runs one job in a fresh container through docker-py: create, start, watch, kill, collect, remove.

Docker errors are translated here and nowhere else. The deadline is enforced by this module
(``container.wait(timeout=...)`` is only an HTTP timeout): a waiter thread reports the exit, a
log thread copies output into the job's log file up to its cap, and the watch loop kills the
container on the deadline, a cancel, a log flood or an output-directory breach.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions

from runner.archive import collect_outputs, dir_usage
from runner.envpolicy import job_environment
from runner.errors import InfrastructureError
from runner.leases import Lease
from runner.models import ImageInfo, JobView, OutputFile, Verdict
from runner.sandbox import LABEL_INSTANCE, JobMounts, container_options
from runner.settings import Settings
from runner.store import JobPaths

log = logging.getLogger("kcoral.executor")
_DOCKER_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException)
_JOB_UID = 65534


@dataclass
class RunResult:
    verdict: Verdict
    exit_code: int | None = None
    reason: str = ""
    log_bytes: int = 0
    outputs: list[OutputFile] = field(default_factory=list)


@dataclass
class _Watch:
    """What the threads around one container report to the watch loop."""

    exited: threading.Event = field(default_factory=threading.Event)
    exit_status: int | None = None
    log_bytes: int = 0
    log_over: bool = False


class DockerExecutor:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        try:
            self.client = docker.from_env(timeout=120, max_pool_size=64)
        except _DOCKER_ERRORS as exc:
            self.client = None
            self.error = f"cannot reach the Docker engine: {exc}"
        else:
            self.error = ""

    # --- engine facts ---------------------------------------------------------------------------

    def _api(self) -> docker.DockerClient:
        if self.client is None:
            raise InfrastructureError(self.error)
        return self.client

    def engine(self) -> dict[str, Any]:
        """Docker reachability and version, for /health."""
        try:
            info = self._api().info()
            return {"ok": True, "version": info.get("ServerVersion", ""), "runtimes": sorted(info.get("Runtimes", {})),
                    "cgroup": info.get("CgroupVersion", ""), "storage": info.get("Driver", "")}
        except (InfrastructureError, *_DOCKER_ERRORS) as exc:
            return {"ok": False, "error": str(exc)}

    def gpu_mode(self) -> str:
        """How GPUs reach containers: the NVIDIA runtime where installed, else device nodes."""
        if self.settings.gpu_mode != "auto":
            return self.settings.gpu_mode
        engine = self.engine()
        return "runtime" if "nvidia" in engine.get("runtimes", []) else "devices"

    def image_info(self, ref: str) -> ImageInfo:
        try:
            image = self._api().images.get(ref)
        except docker.errors.ImageNotFound:
            raise InfrastructureError(f"job image {ref} is not present: run `kcoral images build`") from None
        except _DOCKER_ERRORS as exc:
            raise InfrastructureError(f"cannot inspect image {ref}: {exc}") from None
        digests = image.attrs.get("RepoDigests") or []
        return ImageInfo(ref=ref, digest=digests[0] if digests else image.id)

    def remove_orphans(self) -> int:
        """Remove containers this server instance left behind (found by label)."""
        try:
            label = f"{LABEL_INSTANCE}={self.settings.instance}"
            found = self._api().containers.list(all=True, filters={"label": label})
            for c in found:
                c.remove(force=True)
            return len(found)
        except _DOCKER_ERRORS as exc:
            raise InfrastructureError(f"cannot clean up old job containers: {exc}") from None

    # --- one job ------------------------------------------------------------------------------

    def run(self, job: JobView, lease: Lease, paths: JobPaths, cancel: threading.Event,
            on_image: Callable[[ImageInfo], None]) -> RunResult:
        container = None
        watch = _Watch()
        try:
            on_image(self.image_info(self.settings.image))
            _prepare_output_dir(paths.raw_out)
            command = [self.settings.python, *job.spec.argv]
            env = job_environment(self.settings.job_env, job.spec.env, job.id)
            options = container_options(self.settings, job.id, command, env,
                                        JobMounts(paths.input, paths.raw_out), lease, self.gpu_mode())
            container = self._api().containers.create(**options)
            container.start()
            started = time.monotonic()
            threads = [threading.Thread(target=_wait_exit, args=(container, watch), daemon=True),
                       threading.Thread(target=_copy_log, args=(container, paths.log, self.settings.limits.log_bytes,
                                                                watch), daemon=True)]
            for t in threads:
                t.start()
            killed = self._watch(container, watch, started + job.spec.timeout_s, cancel, paths)
            watch.exited.wait(30)
            for t in threads:
                t.join(10)
            container.reload()
            state = container.attrs.get("State", {})
            return self._finish(killed, state, watch, job, paths)
        except InfrastructureError as exc:
            return RunResult(Verdict.infrastructure_error, reason=exc.message, log_bytes=watch.log_bytes)
        except _DOCKER_ERRORS as exc:
            return RunResult(Verdict.infrastructure_error, reason=f"Docker error: {exc}", log_bytes=watch.log_bytes)
        finally:
            if container is not None:
                _remove(container)

    def _watch(self, container: Any, watch: _Watch, deadline: float, cancel: threading.Event,
               paths: JobPaths) -> tuple[Verdict, str] | None:
        """Wait for the exit; kill on a breach and say which. None when the job ended by itself."""
        limits = self.settings.limits
        while not watch.exited.wait(limits.output_poll_s):
            breach: tuple[Verdict, str] | None = None
            if cancel.is_set():
                breach = (Verdict.cancelled, "cancelled by request")
            elif time.monotonic() >= deadline:
                breach = (Verdict.timeout, "the job ran past its timeout and was killed")
            elif watch.log_over:
                breach = (Verdict.output_limit, f"the job printed more than {limits.log_bytes} bytes and was killed")
            else:
                usage = dir_usage(paths.raw_out, limits.output_files * 2)
                if usage.bytes > limits.output_bytes or usage.entries > limits.output_files * 2:
                    breach = (Verdict.output_limit,
                              f"the output directory passed its budget ({limits.output_bytes} bytes, "
                              f"{limits.output_files} files) and the job was killed")
            if breach:
                _kill(container)
                return breach
        return None

    def _finish(self, killed: tuple[Verdict, str] | None, state: dict[str, Any], watch: _Watch,
                job: JobView, paths: JobPaths) -> RunResult:
        collected = collect_outputs(paths.raw_out, paths.outputs, self.settings.limits)
        shutil.rmtree(paths.raw_out, ignore_errors=True)
        exit_code = watch.exit_status if watch.exit_status is not None else state.get("ExitCode")
        notes = "; ".join(f"output refused: {r}" for r in collected.refused[:20])
        if killed:
            verdict, reason = killed
        elif state.get("OOMKilled"):
            limit = self.settings.limits.memory_bytes
            verdict, reason = Verdict.memory_limit, f"killed at the memory limit ({limit} bytes)"
        elif exit_code == 0:
            verdict, reason = Verdict.ok, ""
        else:
            verdict, reason = Verdict.exit, f"exited with code {exit_code}"
        reason = "; ".join(x for x in (reason, notes) if x)
        return RunResult(verdict, exit_code, reason, watch.log_bytes, collected.files)


def _prepare_output_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        os.chown(path, _JOB_UID, _JOB_UID)
        os.chmod(path, 0o700)
    else:
        os.chmod(path, 0o777)


def _wait_exit(container: Any, watch: _Watch) -> None:
    while True:
        try:
            watch.exit_status = int(container.wait(timeout=3600)["StatusCode"])
            break
        except requests.exceptions.ReadTimeout:
            continue
        except _DOCKER_ERRORS as exc:
            log.warning("waiting for %s failed: %s", container.id[:12], exc)
            break
    watch.exited.set()


def _copy_log(container: Any, path: Path, cap: int, watch: _Watch) -> None:
    try:
        with open(path, "ab") as out:
            for chunk in container.logs(stream=True, follow=True, stdout=True, stderr=True):
                room = cap - watch.log_bytes
                if room <= 0:
                    watch.log_over = True
                    continue
                piece = chunk[:room]
                out.write(piece)
                out.flush()
                watch.log_bytes += len(piece)
                if len(chunk) > room:
                    watch.log_over = True
    except _DOCKER_ERRORS as exc:
        log.warning("log stream of %s ended: %s", container.id[:12], exc)


def _kill(container: Any) -> None:
    try:
        container.kill()
    except _DOCKER_ERRORS as exc:  # already gone is fine
        log.info("kill %s: %s", container.id[:12], exc)


def _remove(container: Any) -> None:
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
    except _DOCKER_ERRORS as exc:
        log.warning("removing %s failed: %s (left for start-up clean-up)", container.id[:12], exc)
