"""``kcoral eval`` on the server: a supervisor and the candidate, in two containers on one lease.

- supervisor (uid 65533, task code only, tasks.harness.supervisor): owns the cases, the holdout,
  the secret sample key, every input and output buffer, the reference, the baseline (a worker of
  its own) and the clock; writes the result document. Its folders (the judge's case file, its
  output, the compiled-kernel cache) are mounted into no other container.
- candidate (uid 65534, the submission, tasks.harness.worker): joins the supervisor's PID (and, on
  CUDA tasks, IPC) namespace, connects to its socket and does what it is told on buffers it is
  handed. It writes nothing the server reads; its output is the job's log.
The server then reads the supervisor's result (fd-relative, no links, size-capped, validated by
tasks.harness.schema) and builds the report (tasks.report). The holdout key never leaves the server; the
per-request sample key reaches the supervisor only. The task directory is snapshotted into the
job, so a rerun evaluates with the same task version.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcoral.runner import jobfs
from kcoral.runner.envpolicy import job_environment
from kcoral.runner.errors import BadRequest, InfrastructureError
from kcoral.runner.executor import RunResult, StepOutcome
from kcoral.runner.jobkinds import CODE_MOUNT, RunContext, code_mounts
from kcoral.runner.models import JobSpec, OutputFile, Verdict
from kcoral.runner.sandbox import SUPERVISOR_UID, ContainerStep
from kcoral.runner.settings import OUTPUT_MOUNT
from kcoral.tasks import cases as case_builder
from kcoral.tasks.harness import schema
from kcoral.tasks.harness.cpuwatch import MOUNT as CGROUP_MOUNT
from kcoral.tasks.harness.taskdef import Task, load_task
from kcoral.tasks.registry import DEFAULT_TASKS_DIR, find_task
from kcoral.tasks.report import build_report, passed, report_lines

if TYPE_CHECKING:
    from kcoral.runner.services import Services

HARNESS_DIR = Path(__file__).resolve().parent / "harness"
FAMILY_MOUNT = f"{CODE_MOUNT}/taskfamily"
JUDGE_CACHE_MOUNT = "/judge-cache"
CHANNEL_MOUNT = "/chan"
#: inside the candidate: the supervisor's compiled-kernel cache, read-only, copied into $HOME at start
SEED_CACHE_MOUNT = f"{CODE_MOUNT}/seed-cache"
#: bytes the supervisor may leave in its output folder (its result document)
SUPERVISOR_OUTPUT_BYTES = 64 << 20


def harness_version() -> str:
    h = hashlib.sha256()
    for path in sorted(HARNESS_DIR.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


class EvalKind:
    name = "eval"

    def validate(self, spec: JobSpec, services: Services) -> None:
        if not spec.task:
            raise BadRequest("an evaluation needs a task id (kcoral tasks lists them)")
        if spec.env or spec.argv or spec.command:
            raise BadRequest("an evaluation takes only the submission: the task owns inputs, environment and timing")
        task = find_task(services.settings.tasks_dir or DEFAULT_TASKS_DIR, spec.task)
        if task.device == "cuda" and not services.gpus:
            raise BadRequest(f"task {task.id} needs a GPU and this server has none")

    def run(self, ctx: RunContext) -> RunResult:
        try:
            return _Evaluation(ctx).run()
        except InfrastructureError as exc:
            return RunResult(Verdict.infrastructure_error, reason=exc.message)


class _Evaluation:
    task: Task  # the snapshot's task, set by _snapshot_task before any step

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.root = ctx.paths.root / "eval"
        self.judge_in = self.root / "judge-in"      # the judge's case file: the supervisor only
        self.judge_dir = self.root / "judge"        # the supervisor's result: the supervisor only
        self.channel = self.root / "chan"           # the supervisor's socket (read-only for the candidate)
        self.judge_log = self.root / "judge.log"
        self.family_copy = self.root / "task"      # the task's folder and its siblings (shared code)
        self.task_copy = self.family_copy          # set to the task's own folder by _snapshot_task

    def run(self) -> RunResult:
        ctx = self.ctx
        task = self._snapshot_task()
        doc = case_builder.build_cases(task, task.module(), case_builder.holdout_key(ctx.settings.data_dir),
                                       os.urandom(16))
        _private_dir(self.judge_in, 0o700)
        _private_dir(self.channel, 0o755)
        (self.judge_in / "cases.json").write_text(doc.to_json())
        _own(self.judge_in / "cases.json")
        run_image = ctx.job.spec.image or ctx.settings.image
        image = ctx.executor.image_info(run_image)
        ctx.on_image(image)
        cache = self._judge_cache()
        supervisor = self._supervisor_step(run_image, cache, task.device == "cuda")
        candidate = self._candidate_step(run_image, cache, task.device == "cuda")
        telemetry: list[dict[str, float]] = []
        stop = threading.Event()
        sampler = threading.Thread(target=self._sample, args=(telemetry, stop), daemon=True)
        sampler.start()
        try:
            sup, cand = ctx.executor.run_group(ctx.job.id, [(supervisor, self.judge_log), (candidate, ctx.paths.log)],
                                               ctx.lease, ctx.deadline, ctx.cancel)
        finally:
            stop.set()
            sampler.join(5)
        if sup.killed:
            return ctx.executor.judge_step(sup)
        result = self._result(sup)
        return self._finish(task, doc, image.digest, telemetry, result, cand)

    # --- steps ------------------------------------------------------------------------------------

    def _supervisor_step(self, image: str, cache: Path, cuda: bool) -> ContainerStep:
        ctx = self.ctx
        cgroups = ctx.executor.cgroup_mount()
        return ContainerStep(
            image=image,
            command=[ctx.settings.python, "-P", "-m", "kcoral.tasks.harness.supervisor", self.task_mount,
                     "/judge-in/cases.json", OUTPUT_MOUNT, f"{CHANNEL_MOUNT}/worker.sock",
                     cgroups[1] if cgroups else "none"],
            # USER: the host's passwd (toolchain mode) has no entry for this uid, and getpass needs a name
            env={**self._env(), "TRITON_CACHE_DIR": f"{JUDGE_CACHE_MOUNT}/triton", "USER": "kcoral-supervisor",
                 "LOGNAME": "kcoral-supervisor"},
            mounts={**self._code(), str(self.judge_in): ("/judge-in", "ro"), str(self.channel): (CHANNEL_MOUNT, "rw"),
                    str(cache): (JUDGE_CACHE_MOUNT, "rw"),
                    **({cgroups[0]: (str(CGROUP_MOUNT), "ro")} if cgroups else {})},
            working_dir="/tmp", output_dir=self.judge_dir, name="supervisor", output_budget=SUPERVISOR_OUTPUT_BYTES,
            uid=SUPERVISOR_UID, share_ipc=cuda)

    def _candidate_step(self, image: str, cache: Path, cuda: bool) -> ContainerStep:
        ctx = self.ctx
        return ContainerStep(
            image=image,
            command=[ctx.settings.python, "-P", "-m", "kcoral.tasks.harness.worker", self.task_mount,
                     f"{CHANNEL_MOUNT}/worker.sock"],
            env={**self._env(), "TRITON_CACHE_DIR": "/tmp/home/.triton/cache", "KCORAL_SEED_CACHE": SEED_CACHE_MOUNT},
            mounts={**self._code(), str(ctx.paths.input): ("/job/input", "ro"),
                    str(self.channel): (CHANNEL_MOUNT, "ro"), str(cache): (SEED_CACHE_MOUNT, "ro")},
            name="candidate", join=True, share_ipc=cuda)

    def _snapshot_task(self) -> Task:
        """Copy the task's family folder (a task may load a sibling's code) into the job, once."""
        spec = self.ctx.job.spec
        if not self.family_copy.is_dir():  # a rerun arrives with the original job's snapshot
            source = find_task(self.ctx.settings.tasks_dir or DEFAULT_TASKS_DIR, spec.task or "")
            shutil.copytree(source.root.parent, self.family_copy, ignore=shutil.ignore_patterns("__pycache__"))
        for manifest in self.family_copy.glob("*/manifest.json"):
            task = load_task(manifest.parent)
            if task.id == spec.task:
                self.task_copy = manifest.parent
                self.task = task
                return task
        raise InfrastructureError(f"the task snapshot of this job has no task {spec.task}")

    @property
    def task_mount(self) -> str:
        return f"{FAMILY_MOUNT}/{self.task_copy.name}"

    def _env(self) -> dict[str, str]:
        env = job_environment(self.ctx.settings.job_env, {}, self.ctx.job.id)
        # the operator's PYTHONPATH (e.g. a host directory holding the task's reference package) stays
        env["PYTHONPATH"] = ":".join(p for p in (CODE_MOUNT, env.get("PYTHONPATH", "")) if p)
        env["TRITON_CACHE_AUTOTUNING"] = "1"
        env["OMP_WAIT_POLICY"] = "PASSIVE"  # idle OpenMP threads sleep: a spinning pool would count as work
        return env

    def _judge_cache(self) -> Path:
        """Compiled kernels and autotuning results of the supervisor's (trusted) baseline and reference,
        kept across requests. Written by supervisor containers only; the candidate gets a read-only
        view that its worker copies into its private $HOME."""
        cache = self.ctx.settings.data_dir / "judge-cache"
        cache.mkdir(exist_ok=True)
        if os.geteuid() == 0 and cache.stat().st_uid != SUPERVISOR_UID:
            for folder, dirs, files in os.walk(cache):
                for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                    os.lchown(name, SUPERVISOR_UID, SUPERVISOR_UID)
        return cache

    def _code(self) -> dict[str, tuple[str, str]]:
        return {**code_mounts("tasks/harness"), str(self.family_copy): (FAMILY_MOUNT, "ro")}

    def _result(self, sup: StepOutcome) -> schema.SupervisorResult:
        """The supervisor's result document, read without following links, size-capped and validated."""
        if sup.exit_code != 0 or sup.oom_killed:
            why = "was killed at the memory limit" if sup.oom_killed else f"exited with code {sup.exit_code}"
            raise InfrastructureError(f"the evaluation's supervisor {why}: {self._judge_tail()}")
        try:
            data = jobfs.read_file(self.judge_dir, "result.json", schema.MAX_RESULT_BYTES)
            return schema.parse_result(data)
        except (OSError, schema.SchemaError) as exc:
            raise InfrastructureError(f"the supervisor's result is unusable: {exc}") from None

    def _judge_tail(self) -> str:
        try:
            with open(self.judge_log, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 1500))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def _sample(self, out: list[dict[str, float]], stop: threading.Event) -> None:
        nvml = self.ctx.nvml
        gpus = self.ctx.lease.gpus
        while nvml and gpus and not stop.wait(0.2):
            reading = nvml.telemetry(gpus[0].index)
            if reading:
                out.append(reading)

    def _finish(self, task: Task, doc: schema.CaseFile, digest: str, telemetry: list[dict[str, float]],
                result: schema.SupervisorResult, cand: StepOutcome) -> RunResult:
        ctx = self.ctx
        if cand.oom_killed:
            for case in result.cases:
                if case.outcome is schema.Outcome.ERROR:
                    case.reason = f"the candidate's container was killed at the memory limit ({case.reason})"
        report = build_report(task.manifest, doc, result)
        report["telemetry"] = _summarise(telemetry)
        lines = report_lines(report)
        receipt = {
            "job": ctx.job.id, "task": task.id, "task_version": task.manifest.get("version", ""),
            "task_sha256": task.content_hash(), "image": digest, "submission_sha256": ctx.job.input_sha256,
            "harness_version": harness_version(), "gpus": [g.model_dump() for g in ctx.lease.gpus],
            "telemetry": report["telemetry"], "seed_hashes": case_builder.seed_hashes(doc),
            "timings": {r["id"]: {"baseline_ms": r.get("raw_baseline_ms"), "kernel_ms": r.get("raw_kernel_ms"),
                                  "protocol_ms": r.get("raw_null_ms")}
                        for r in report.get("workloads", []) if r.get("timed")},
            "finished": time.time(),
        }
        for row in report.get("workloads", []):
            for key in ("raw_baseline_ms", "raw_kernel_ms", "raw_null_ms"):
                row.pop(key, None)
        with open(ctx.paths.log, "ab") as log:
            log.write(("\n".join(lines) + "\n").encode())
        outputs = [_write_json(ctx.paths.outputs, "report.json", {**report, "lines": lines}),
                   _write_json(ctx.paths.outputs, "receipt.json", receipt)]
        shutil.rmtree(self.judge_dir, ignore_errors=True)
        ok = passed(report)
        return RunResult(Verdict.ok if ok else Verdict.exit, 0 if ok else 1,
                         "" if ok else "the evaluation did not pass (see the report)",
                         ctx.paths.log.stat().st_size if ctx.paths.log.exists() else 0, outputs)


def _private_dir(path: Path, mode: int) -> None:
    """A folder the supervisor owns: ``mode`` 0700 keeps the candidate out, 0755 lets it look in."""
    path.mkdir(parents=True, exist_ok=True)
    _own(path)
    os.chmod(path, mode)


def _own(path: Path) -> None:
    if os.geteuid() == 0:
        os.chown(path, SUPERVISOR_UID, SUPERVISOR_UID)


def _write_json(folder: Path, name: str, doc: dict[str, Any]) -> OutputFile:
    folder.mkdir(parents=True, exist_ok=True)
    data = json.dumps(doc, indent=1).encode()
    (folder / name).write_bytes(data)
    return OutputFile(path=name, size=len(data), sha256=hashlib.sha256(data).hexdigest())


def _summarise(samples: list[dict[str, float]]) -> dict[str, Any]:
    if not samples:
        return {}
    keys = samples[0].keys()
    return {k: {"min": min(s[k] for s in samples), "median": statistics.median(s[k] for s in samples),
                "max": max(s[k] for s in samples)} for k in keys} | {"samples": len(samples)}
