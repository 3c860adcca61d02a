"""``kcoral eval`` on the server: three containers per request, the judge outside the candidate.

1. judge-prepare (task code only): expected outputs of every case and a trusted baseline time,
   written to a directory no other container sees.
2. candidate (the submission + the public harness): runs the cases from the public case file
   (opaque ids, one recipe form for every phase), saves outputs and timing claims.
3. judge-check (task code only): compares the candidate's outputs with the expected ones.
The server then builds the report (tasks.report), bounding the candidate's timing claims.
The holdout key and the per-request nonce never leave the server process; the candidate sees
only the seeds derived from them. The task directory is snapshotted into the job, so a rerun
evaluates with the same task version.
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

from runner.envpolicy import job_environment
from runner.errors import BadRequest, InfrastructureError
from runner.executor import RunResult
from runner.jobkinds import CODE_MOUNT, RunContext, code_mounts
from runner.models import JobSpec, OutputFile, Verdict
from runner.sandbox import ContainerStep
from tasks import cases as case_builder
from tasks.harness import casefile
from tasks.harness.taskdef import Task, load_task
from tasks.registry import DEFAULT_TASKS_DIR, find_task
from tasks.report import build_report, passed, report_lines
from tasks.wallclock import wall_marks

if TYPE_CHECKING:
    from runner.services import Services

HARNESS_DIR = Path(__file__).resolve().parent / "harness"
FAMILY_MOUNT = f"{CODE_MOUNT}/taskfamily"
JUDGE_CACHE_MOUNT = "/judge-cache"
#: inside the candidate: the judge's compiled-kernel cache, read-only, copied into $HOME at start
SEED_CACHE_MOUNT = f"{CODE_MOUNT}/seed-cache"


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
        self.judge_in = self.root / "judge-in"      # full case file: judge containers only
        self.judge_dir = self.root / "judge"        # expected outputs: judge containers only
        self.verdict_dir = self.root / "verdict"
        self.public = self.root / "public"          # the case file the candidate sees
        self.judge_log = self.root / "judge.log"
        self.family_copy = self.root / "task"      # the task's folder and its siblings (shared code)
        self.task_copy = self.family_copy          # set to the task's own folder by _snapshot_task

    def run(self) -> RunResult:
        ctx = self.ctx
        task = self._snapshot_task()
        module = task.module()
        nonce = os.urandom(16)
        doc = case_builder.build_cases(task, module, case_builder.holdout_key(ctx.settings.data_dir), nonce)
        for d in (self.judge_in, self.public):
            d.mkdir(parents=True, exist_ok=True)
        casefile.write(self.judge_in / "cases.json", doc)
        casefile.write(self.public / "cases.json", casefile.public_view(doc))
        image = ctx.executor.image_info(ctx.job.spec.image or ctx.settings.image)
        ctx.on_image(image)
        run_image = ctx.job.spec.image or ctx.settings.image

        cache = self._judge_cache()
        prepare = self._judge_step(run_image, ["prepare", self.task_mount, "/judge-in/cases.json", "/job/out"],
                                   {str(self.judge_in): ("/judge-in", "ro"), str(cache): (JUDGE_CACHE_MOUNT, "rw")},
                                   self.judge_dir, "judge-prepare",
                                   {"TRITON_CACHE_DIR": f"{JUDGE_CACHE_MOUNT}/triton"})
        self._run_judge(prepare)

        telemetry: list[dict[str, float]] = []
        stop = threading.Event()
        sampler = threading.Thread(target=self._sample, args=(telemetry, stop), daemon=True)
        sampler.start()
        candidate = ContainerStep(
            image=run_image,
            command=[ctx.settings.python, "-P", "-m", "tasks.harness.candidate", self.task_mount,
                     "/job/cases/cases.json", "/job/out"],
            env={**self._env(), "TRITON_CACHE_DIR": "/tmp/home/.triton/cache",
                 "KCORAL_SEED_CACHE": SEED_CACHE_MOUNT},
            mounts={str(ctx.paths.input): ("/job/input", "ro"), **code_mounts("tasks"),
                    str(self.family_copy): (FAMILY_MOUNT, "ro"), str(self.public): ("/job/cases", "ro"),
                    str(cache): (SEED_CACHE_MOUNT, "ro")},
            output_dir=ctx.paths.raw_out, name="candidate", output_budget=self.output_budget)
        try:
            outcome = ctx.executor.run_step(ctx.job.id, candidate, ctx.lease, ctx.deadline, ctx.cancel, ctx.paths.log)
        finally:
            stop.set()
            sampler.join(5)
        step = ctx.executor.judge_step(outcome)
        if step.verdict not in (Verdict.ok, Verdict.exit):
            return step
        args = ["check", self.task_mount, "/judge-in/cases.json", "/judge", "/cand", "/job/out"]
        check = self._judge_step(run_image, args,
                                 {str(self.judge_in): ("/judge-in", "ro"), str(self.judge_dir): ("/judge", "ro"),
                                  str(ctx.paths.raw_out): ("/cand", "ro")}, self.verdict_dir, "judge-check")
        self._run_judge(check)
        walls = wall_marks(_read_from(ctx.paths.log, outcome.log_start), outcome.arrivals)
        return self._finish(task, doc, image.digest, telemetry, step, walls)

    # --- steps ------------------------------------------------------------------------------------

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
    def output_budget(self) -> int:
        """Bytes of saved outputs an evaluation step may write: the task's own figure, or 1 GiB."""
        return int(self.task.manifest.get("output_bytes", 1 << 30))

    @property
    def task_mount(self) -> str:
        return f"{FAMILY_MOUNT}/{self.task_copy.name}"

    def _env(self) -> dict[str, str]:
        env = job_environment(self.ctx.settings.job_env, {}, self.ctx.job.id)
        # the operator's PYTHONPATH (e.g. a host directory holding the task's reference package) stays
        env["PYTHONPATH"] = ":".join(p for p in (CODE_MOUNT, env.get("PYTHONPATH", "")) if p)
        env["TRITON_CACHE_AUTOTUNING"] = "1"
        return env

    def _judge_cache(self) -> Path:
        """Compiled kernels and autotuning results of the judge's own (trusted) runs, kept across requests.

        Written only by judge-prepare containers; the candidate gets a read-only view that its harness
        copies into its private $HOME, so the baseline need not compile and tune again in its process.
        """
        cache = self.ctx.settings.data_dir / "judge-cache"
        cache.mkdir(exist_ok=True)
        if os.geteuid() == 0:
            os.chown(cache, 65534, 65534)
        return cache

    def _judge_step(self, image: str, args: list[str], mounts: dict[str, tuple[str, str]], out: Path,
                    name: str, env: dict[str, str] | None = None) -> ContainerStep:
        command = [self.ctx.settings.python, "-P", "-m", "tasks.harness.judge", *args]
        mounts = {**code_mounts("tasks"), str(self.family_copy): (FAMILY_MOUNT, "ro"), **mounts}
        return ContainerStep(image=image, command=command, env={**self._env(), **(env or {})}, mounts=mounts,
                             working_dir="/tmp", output_dir=out, name=name,
                             output_budget=self.output_budget)

    def _run_judge(self, step: ContainerStep) -> None:
        ctx = self.ctx
        outcome = ctx.executor.run_step(ctx.job.id, step, ctx.lease, ctx.deadline, ctx.cancel, self.judge_log)
        result = ctx.executor.judge_step(outcome)
        if result.verdict != Verdict.ok:
            tail = self.judge_log.read_bytes()[-1500:].decode(errors="replace") if self.judge_log.exists() else ""
            if result.verdict in (Verdict.timeout, Verdict.cancelled):
                raise InfrastructureError(f"{step.name}: {result.reason}")
            raise InfrastructureError(f"{step.name} failed ({result.reason}): {tail}")

    def _sample(self, out: list[dict[str, float]], stop: threading.Event) -> None:
        nvml = self.ctx.nvml
        gpus = self.ctx.lease.gpus
        while nvml and gpus and not stop.wait(0.2):
            reading = nvml.telemetry(gpus[0].index)
            if reading:
                out.append(reading)

    def _finish(self, task: Task, doc: dict[str, Any], digest: str, telemetry: list[dict[str, float]],
                step: RunResult, walls: dict[str, dict[str, Any]]) -> RunResult:
        ctx = self.ctx
        verdicts = json.loads((self.verdict_dir / "verdicts.json").read_text())
        claims = _read_json(ctx.paths.raw_out / "results.json")
        trusted = _read_json(self.judge_dir / "trusted_baseline.json")
        if step.verdict == Verdict.exit:
            claims.setdefault("tampered", [])
            claims["tampered"] = [*claims["tampered"], f"the harness process exited with code {step.exit_code}"]
        report = build_report(task.manifest, doc, verdicts, claims, trusted, walls)
        report["telemetry"] = _summarise(telemetry)
        lines = report_lines(report)
        receipt = {
            "job": ctx.job.id, "task": task.id, "task_version": task.manifest.get("version", ""),
            "task_sha256": task.content_hash(), "image": digest, "submission_sha256": ctx.job.input_sha256,
            "harness_version": harness_version(), "gpus": [g.model_dump() for g in ctx.lease.gpus],
            "telemetry": report["telemetry"], "seed_hashes": case_builder.seed_hashes(doc),
            "timings": {r["id"]: {"baseline_ms": r.get("raw_baseline_ms"), "kernel_ms": r.get("raw_kernel_ms")}
                        for r in report.get("workloads", []) if r.get("timed")},
            "finished": time.time(),
        }
        for row in report.get("workloads", []):
            row.pop("raw_baseline_ms", None)
            row.pop("raw_kernel_ms", None)
        with open(ctx.paths.log, "ab") as log:
            log.write(("\n".join(lines) + "\n").encode())
        outputs = [_write_json(ctx.paths.outputs, "report.json", {**report, "lines": lines}),
                   _write_json(ctx.paths.outputs, "receipt.json", receipt)]
        shutil.rmtree(ctx.paths.raw_out, ignore_errors=True)
        shutil.rmtree(self.judge_dir, ignore_errors=True)
        ok = passed(report)
        return RunResult(Verdict.ok if ok else Verdict.exit, 0 if ok else 1,
                         "" if ok else "the evaluation did not pass (see the report)",
                         ctx.paths.log.stat().st_size if ctx.paths.log.exists() else 0, outputs)


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read()
    except OSError:
        return b""


def _read_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
        return doc if isinstance(doc, dict) else {}
    except (OSError, ValueError):
        return {}


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
