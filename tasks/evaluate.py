"""``kcoral eval`` on the server: a supervisor and the candidate, in two containers on one lease.

- supervisor (uid 65533, task code only, tasks.harness.supervisor): owns the cases, the holdout,
  the secret sample key, every input and output buffer, the reference, the baseline (a worker of
  its own) and the clock; writes the result document. Its folders (the judge's case file, its
  output, the compiled-kernel cache) are mounted into no other container.
- candidate (uid 65534, the submission, tasks.harness.worker): its own PID and IPC namespaces (the
  judge's processes are not visible to it), its own cores (tasks.harness.cores: none of the judge's),
  an empty /sys/fs/cgroup. It connects to the supervisor's socket and does what it is told on
  buffers it is handed (file descriptors over that socket: tasks.harness.shared). It writes nothing
  the server reads; its output is the job's log. The server writes its cgroup's name beside the
  socket once it is created, for the supervisor's watch over its CPU time (tasks.harness.cpuwatch).
The server then reads the supervisor's result (fd-relative, no links, size-capped, validated by
tasks.harness.schema) and builds the report (tasks.report). The holdout key never leaves the server; the
per-request sample key reaches the supervisor only. The task directory is snapshotted into the
job, so a rerun evaluates with the same task version.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import statistics
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcoral.protocol.errors import BadRequest, InfrastructureError
from kcoral.protocol.jobenv import INPUT_MOUNT, OUTPUT_MOUNT
from kcoral.protocol.models import EvalSpec, JobKindName, SpecBase, Verdict
from kcoral.protocol.printable import printable
from kcoral.protocol.typeddata import DataError, to_data
from kcoral.runner import jobfs
from kcoral.runner.codecopy import code_digest
from kcoral.runner.envpolicy import job_environment
from kcoral.runner.jobkinds import CODE_MOUNT, HostFacts, code_mounts, spec_as, with_code_path
from kcoral.runner.leases import gpu_types
from kcoral.runner.plan import ContainerStep, Finished, JobContext, Outcomes, Plan, StepOutcome
from kcoral.runner.settings import SUPERVISOR_UID
from kcoral.runner.warmup import template_tar
from kcoral.tasks import calibration
from kcoral.tasks import cases as case_builder
from kcoral.tasks.contract import submission_file, template_source
from kcoral.tasks.documents import EvalReport, Receipt, WorkloadRow, WorkloadScore
from kcoral.tasks.harness import schema
from kcoral.tasks.harness.cores import CoreLayout, lost_shares
from kcoral.tasks.harness.cores import split as split_cores
from kcoral.tasks.harness.cpuwatch import MOUNT as CGROUP_MOUNT
from kcoral.tasks.harness.roles import CANDIDATE_CGROUP_FILE
from kcoral.tasks.harness.taskdef import Task, load_task
from kcoral.tasks.registry import find_task, gpu_type_for, pack_gpu_types
from kcoral.tasks.report import build_report, sample_times
from kcoral.tasks.report_lines import uncalibrated_rows, with_lines

if TYPE_CHECKING:
    from kcoral.runner.leases import Lease

HARNESS_DIR = Path(__file__).resolve().parent / "harness"
#: the problem packs' adapters, judge code as the harness is (tasks.packs)
PACKS_DIR = Path(__file__).resolve().parent / "packs"
FAMILY_MOUNT = f"{CODE_MOUNT}/taskfamily"
JUDGE_CACHE_MOUNT = "/judge-cache"
CHANNEL_MOUNT = "/chan"
#: inside the candidate: the supervisor's compiled-kernel cache, read-only, copied into $HOME at start
SEED_CACHE_MOUNT = f"{CODE_MOUNT}/seed-cache"
#: bytes the supervisor may leave in its output folder (its result document)
SUPERVISOR_OUTPUT_BYTES = 64 << 20
#: the most bytes of the supervisor's progress.json that are read
#: a stopped evaluation's reason names at most this many finished cases
MAX_DONE_SHOWN = 20
MAX_PROGRESS_BYTES = 16384
UNSEPARATED = (
    "this server could not give the evaluation cores of its own apart from the judge's (its CPU slots are not "
    "pinned to cores: start it with fewer --cpu-slots), so the candidate could slow the baseline's calls"
)
#: a report of a 2-core lease whose slot has no calibration of the task (tasks.harness.cores, tasks.calibration)
POSITION_UNCORRECTED = (
    "a 2-core lease, where only the candidate's calls cross to a core of their own: identical code can measure "
    "a few % slower until `kcoral calibrate TASK`"
)


def _position(report: EvalReport, layout: CoreLayout) -> str:
    """:data:`POSITION_UNCORRECTED` where the lease's layout puts a cost on the candidate's calls alone (2
    cores) and a timed workload's slot has no calibration to take it off; "" otherwise (an A/A request
    measures that cost: it carries none)."""
    return POSITION_UNCORRECTED if layout.only_candidate_crosses and uncalibrated_rows(report) else ""


def _snapshot_problem(task: Task, into: Path) -> None:
    """A pack problem's files (its manifest's ``files``, relative to its root's parent), and its manifest
    as manifest.json in its root's copy: the snapshot then holds this one task, as a task folder does."""
    assert task.pack is not None
    for name in task.pack.get("files", []):
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(task.root.parent / name, target)
    root = into / task.root.name
    root.mkdir(parents=True, exist_ok=True)
    (root / "manifest.json").write_text(json.dumps(task.manifest))


def harness_version() -> str:
    h = hashlib.sha256()
    for path in sorted(HARNESS_DIR.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    for path in sorted(PACKS_DIR.glob("*.py")):
        h.update(f"packs/{path.name}".encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


class EvalKind:
    name = JobKindName.eval

    def validate(self, spec: SpecBase, host: HostFacts) -> SpecBase:
        """The spec's model already refuses anything but the task (argv, env: the task owns them).
        The task's manifest owns the time limit too: none asked, the job gets the task's
        ``timeout_s``; more than it is refused."""
        evaluation = spec_as(spec, EvalSpec)
        if not evaluation.task:
            raise BadRequest("an evaluation needs a task id (kcoral tasks lists them)")
        if evaluation.calibration:
            raise BadRequest(
                "calibration is set by the server alone, on its own A/A requests: ask for them with "
                "POST /v1/calibrations (kcoral calibrate TASK)"
            )
        task = find_task(host.settings.tasks_dirs, evaluation.task)
        if task.device == "cuda" and not host.gpus:
            if task.gpu_types:
                raise BadRequest(f"task {task.id} runs on {pack_gpu_types(task.gpu_types)}, and this server has no GPU")
            raise BadRequest(f"task {task.id} needs a GPU and this server has none")
        limit = min(task.timeout_s, host.settings.limits.max_timeout_s)  # the server's limit is the ceiling
        if evaluation.timeout_s > limit:
            raise BadRequest(
                f"task {task.id} allows {limit:g} s; {evaluation.timeout_s:g} s is more (leave --timeout out to get it)"
            )
        gpu = gpu_type_for(task, evaluation.gpu_type, gpu_types(host.gpus))
        return replace(evaluation, timeout_s=evaluation.timeout_s or limit, gpu_type=gpu)

    def plan(self, ctx: JobContext) -> Plan:
        return _Evaluation(ctx).plan()


class _Evaluation:
    task: Task  # the snapshot's task, set by _snapshot_task before any step

    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx
        self.root = ctx.paths.root / "eval"
        self.judge_in = self.root / "judge-in"  # the judge's case file: the supervisor only
        self.judge_dir = ctx.paths.judge  # the supervisor's result: the supervisor only
        self.channel = self.root / "chan"  # the supervisor's socket (read-only for the candidate)
        self.judge_log = self.root / "judge.log"
        self.family_copy = ctx.paths.snapshot  # the task's folder and its siblings (shared code)
        self.cores = layout_of(tuple(ctx.lease.cores))  # who runs where while a case is timed
        self.task_copy = self.family_copy  # set to the task's own folder by _snapshot_task

    def plan(self) -> Plan:
        """Snapshot the task, write the case file (holdout and sample keys drawn here), and name the
        two containers; :meth:`finish` turns the supervisor's result into the report."""
        ctx = self.ctx
        self.began = time.monotonic()
        task = self._snapshot_task()
        try:
            self.cases = case_builder.build_cases(
                task,
                task.module(),
                case_builder.holdout_key(ctx.settings.data_dir),
                os.urandom(16),
                ctx.settings.limits.eval_timing,
            )
        except ValueError as exc:  # the server's own task manifest is wrong
            raise InfrastructureError(str(exc)) from None
        self.check = spec_as(ctx.job.spec, EvalSpec).check
        self.cases.deadline = time.time() + (spec_as(ctx.job.spec, EvalSpec).timeout_s or task.timeout_s)
        if self.check:  # correctness of the public workloads only: no probe, nothing timed
            self.cases.cases = [replace(c, timed=False) for c in self.cases.cases if c.phase is schema.Phase.WORKLOAD]
        _private_dir(self.judge_in, 0o700)
        _private_dir(self.channel, 0o755)
        (self.judge_in / "cases.json").write_text(self.cases.to_json())
        _own(self.judge_in / "cases.json")
        image = ctx.job.spec.image or ctx.settings.image
        cache = self._judge_cache()
        steps = [self._supervisor_step(cache), self._candidate_step(cache)]
        return Plan(
            image=image,
            steps=steps,
            finish=self.finish,
            discard=(self.judge_dir,),
            explain_kill=self.explain_kill,
            hold_cpus_awake=not self.check,  # a timed call pays no core's wake-up on one side only
        )

    # --- steps ------------------------------------------------------------------------------------

    def _supervisor_step(self, cache: Path) -> ContainerStep:
        ctx = self.ctx
        cgroups = ctx.engine.cgroup_mount()
        return ContainerStep(
            command=[
                ctx.settings.python,
                "-P",
                "-m",
                "kcoral.tasks.harness.supervise",
                self.task_mount,
                "/judge-in/cases.json",
                OUTPUT_MOUNT,
                f"{CHANNEL_MOUNT}/worker.sock",
                cgroups[1] if cgroups else "none",
                self.cores.wire(),
            ],
            # USER: the host's passwd (toolchain mode) has no entry for this uid, and getpass needs a name
            env={
                **self._env(),
                "TRITON_CACHE_DIR": f"{JUDGE_CACHE_MOUNT}/triton",
                "USER": "kcoral-supervisor",
                "LOGNAME": "kcoral-supervisor",
            },
            mounts={
                **self._code(),
                str(self.judge_in): ("/judge-in", "ro"),
                str(self.channel): (CHANNEL_MOUNT, "rw"),
                str(cache): (JUDGE_CACHE_MOUNT, "rw"),
                **({cgroups[0]: (str(CGROUP_MOUNT), "ro")} if cgroups else {}),
            },
            working_dir="/tmp",
            output_dir=self.judge_dir,
            name="supervisor",
            output_budget=SUPERVISOR_OUTPUT_BYTES,
            uid=SUPERVISOR_UID,
            log=self.judge_log,
            cpus=self.cores.container if self.cores.separated else None,
            timed=True,
        )

    def _candidate_step(self, cache: Path) -> ContainerStep:
        ctx = self.ctx
        return ContainerStep(
            command=[
                ctx.settings.python,
                "-P",
                "-m",
                "kcoral.tasks.harness.worker",
                self.task_mount,
                f"{CHANNEL_MOUNT}/worker.sock",
            ],
            env={
                **self._env(),
                "TRITON_CACHE_DIR": "/tmp/home/.triton/cache",
                "KCORAL_SEED_CACHE": SEED_CACHE_MOUNT,
                **({"KCORAL_EVAL_CHECK": "1"} if self.check else {}),
            },
            mounts={
                **self._code(),
                str(ctx.paths.input): (INPUT_MOUNT, "ro"),
                str(self.channel): (CHANNEL_MOUNT, "ro"),
                str(cache): (SEED_CACHE_MOUNT, "ro"),
            },
            name="candidate",
            cpus=self.cores.candidate if self.cores.separated else None,
            cgroup_file=self.channel / CANDIDATE_CGROUP_FILE,
            hide_cgroups=True,
            log_keep=ctx.settings.limits.eval_log_bytes,
            timed=True,
        )

    def _snapshot_task(self) -> Task:
        """Copy the task's family folder (a task may load a sibling's code) into the job, once."""
        spec = spec_as(self.ctx.job.spec, EvalSpec)
        if not self.family_copy.is_dir():  # a rerun arrives with the original job's snapshot
            source = find_task(self.ctx.settings.tasks_dirs, spec.task)
            if source.pack is not None:
                _snapshot_problem(source, self.family_copy)
            else:
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
        env = with_code_path(job_environment(self.ctx.settings.operator_env(), {}, self.ctx.job.id))
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
        code = code_mounts(self.ctx.settings.data_dir, "tasks/harness", "tasks/packs", "protocol")
        return {**code, str(self.family_copy): (FAMILY_MOUNT, "ro")}

    def _result(self, sup: StepOutcome) -> schema.SupervisorResult:
        """The supervisor's result document, read without following links, size-capped and validated."""
        if sup.exit_code != 0 or sup.oom_killed:
            why = "was killed at the memory limit" if sup.oom_killed else f"exited with code {sup.exit_code}"
            raise InfrastructureError(
                f"the evaluation's supervisor {why}: {last_error(self._judge_tail())} (its whole log: "
                "eval/judge.log in the job's folder on the server)"
            )
        try:
            data = jobfs.read_file(self.judge_dir, "result.json", schema.MAX_RESULT_BYTES)
            return schema.parse_result(data)
        except (OSError, DataError) as exc:
            raise InfrastructureError(f"the supervisor's result is unusable: {exc}") from None

    def _judge_tail(self) -> str:
        try:
            with open(self.judge_log, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 1500))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def explain_kill(self, killed: Finished) -> Finished:
        """A deadline, a cancel or a limit that stopped the evaluation, with where it was then (the
        supervisor's progress.json: a holdout probe by its number only, or the workload and whether
        it was being checked or timed)."""
        where = self._where()
        return replace(killed, reason=f"{killed.reason} ({where})" if where else killed.reason)

    def _where(self) -> str:
        try:
            doc = json.loads(jobfs.read_file(self.judge_dir, "progress.json", MAX_PROGRESS_BYTES))
            phase = doc.get("phase")
            after = f" after {time.monotonic() - self.began:.0f} s"
            if phase == "holdout":
                return f"stopped{after} in holdout probe {int(doc['probe'])} of {int(doc['of'])}" + _had(doc)
            if phase == "workload":
                step = "timing" if doc.get("step") == "timing" else "checking"
                return f"stopped{after} while {step} workload {printable(str(doc['workload']))[:100]}" + _had(doc)
            if phase == "start":
                return f"stopped{after} while starting: {printable(str(doc.get('step', '')))[:100]}"
        except (OSError, jobfs.UnsafeFile, ValueError, KeyError, TypeError):
            pass
        return ""

    def _aa_request(self) -> bool:
        """Whether this job is one of the server's A/A requests (tasks.calibration): flagged so (which
        no client may: :meth:`EvalKind.validate`), timed, and its input the task's own template as
        the server packs it (runner.warmup.template_tar), byte for byte."""
        if not spec_as(self.ctx.job.spec, EvalSpec).calibration or self.check:
            return False
        source = template_source(self.task)
        if source is None:
            return False
        upload = template_tar(source, submission_file(self.task))
        return hashlib.sha256(upload).hexdigest() == self.ctx.job.input_sha256

    def _record_aa(self, report: EvalReport, key: calibration.CalibrationKey) -> str:
        """Keep a passed A/A request's figures for its slot; the report's line that says what became of it."""
        book, slot = self.ctx.calibrations, key.slot
        if not report.ok or book is None:
            why = "no store of calibrations where it ran" if book is None else "it did not pass"
            return f"calibration: this A/A request on slot {slot} is not kept ({why})"
        runs = calibration.aa_runs(report, self.ctx.job.id, time.time())
        book.add_calibration(key, runs)
        runs = book.calibration_runs(key)
        kept = {r.job for r in calibration.usable(runs, time.time(), self.ctx.settings.limits.calibration)}
        return (
            f"calibration: this A/A request is kept for slot {slot} ({len(kept)} recent there; a noise floor "
            f"needs {calibration.MIN_REQUESTS})"
        )

    def finish(self, outcomes: Outcomes) -> Finished:
        """The report (log lines and report.json) and the receipt, from the supervisor's result."""
        ctx, task, doc = self.ctx, self.task, self.cases
        sup, cand = outcomes.steps
        result = self._result(sup)
        if cand.oom_killed:
            for case in result.cases:
                if case.outcome is schema.Outcome.ERROR:
                    case.reason = f"the candidate's container was killed at the memory limit ({case.reason})"
        telemetry = _summarise(outcomes.telemetry)
        task_sha256 = task.content_hash()
        key = calibration.CalibrationKey(
            calibration_slot(ctx.lease, self.cores), task.id, task_sha256, calibration.method_sha256(doc.timing)
        )
        aa = self._aa_request()
        floors = None
        if not self.check and not aa and ctx.calibrations is not None:
            runs = ctx.calibrations.calibration_runs(key)
            floors = calibration.floors(runs, time.time(), ctx.settings.limits.calibration)
        report = build_report(task.manifest, doc, result, check=self.check, floors=floors, assume_floor=not aa)
        if not self.check and not self.cores.separated:
            report = report.but(inconclusive=[*report.inconclusive, UNSEPARATED])
        report = report.but(telemetry=telemetry, calibration=aa or None, wake_latency=outcomes.wake_latency)
        report = with_lines(report.but(position=_position(report, self.cores)))
        if aa:
            report = report.but(lines=[*report.lines, self._record_aa(report, key)])
        receipt = Receipt(
            job=ctx.job.id,
            task=task.id,
            task_version=str(task.manifest.get("version", "")),
            task_sha256=task_sha256,
            manifest_sha256=_sha256(task.root / "manifest.json"),
            image=outcomes.image.digest,
            submission_sha256=ctx.job.input_sha256,
            harness_version=harness_version(),
            judge_code_sha256=code_digest(ctx.settings.data_dir),
            check=self.check,
            gpus=to_data(ctx.lease.gpus),
            telemetry=telemetry,
            seed_hashes=case_builder.seed_hashes(doc),
            timings=sample_times(doc, result),
            method=asdict(doc.timing),
            workloads={row.id: _workload_score(row) for row in report.workloads},
            finished=time.time(),
        )
        if report.ok:
            verdict, reason = Verdict.ok, ""
        elif report.correct:  # every check passed; the host was too noisy to time it
            verdict, reason = Verdict.inconclusive, f"no score: {report.inconclusive[0]}"
        else:
            verdict, reason = Verdict.rejected, "the evaluation did not pass (see the report)"
        return Finished(
            verdict,
            0 if report.ok else None,
            reason,
            documents={EvalReport.FILE: report.document(), Receipt.FILE: receipt.document()},
            log_lines=report.lines,
            score=report.score,
        )


def last_error(log: str) -> str:
    """The line of a log's end that names what went wrong: a traceback's last line (``RuntimeError:
    cuMemCreate failed ...``), else the last line written; printable and at most 400 characters. A
    person reads the reason; the traceback, with the judge's own paths, stays in the judge's log."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    named = [line for line in lines if _ERROR_LINE.match(line)]
    found = named[-1] if named else lines[-1] if lines else "(its log is empty)"
    return printable(found)[:400]


#: a traceback's last line: an exception's (dotted) name, a colon, what it says
_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failure|Warning)\b(: |$)")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _workload_score(row: WorkloadRow) -> WorkloadScore:
    return WorkloadScore(verdict=row.verdict, speedup=row.speedup, speedup_lo=row.speedup_lo, speedup_hi=row.speedup_hi)


@functools.cache
def layout_of(cores: tuple[int, ...]) -> CoreLayout:
    """A lease's core layout, by the host's interrupt load when this server first met it, then the same for
    the server's life: a slot's A/A calibration is kept per layout, and a fresh host's shares since boot
    move from one request to the next (three layouts in one H200 run: bench/results/gpu-host-issue29/k1)."""
    return split_cores(cores, _host_lost_shares())


def _host_lost_shares() -> dict[int, float]:
    """Each core's share of time taken by interrupts, softirqs and steal since boot (empty where
    /proc/stat cannot be read: the cores then go in their numbers' order)."""
    try:
        with open("/proc/stat") as f:
            return lost_shares(f.read(1 << 20))
    except OSError:
        return {}


def calibration_slot(lease: Lease, cores: CoreLayout) -> str:
    """The key an evaluation's A/A calibration is kept under: the lease's slots (a cluster host's as
    HOST/SLOT) joined with "+", then "@" and the core layout (``cpu0+cpu1@0:0:1``)."""
    names = sorted(f"{lease.host}/{s.name}" if lease.host else s.name for s in lease.slots)
    return f"{'+'.join(names)}@{cores.wire()}"


def _had(progress: dict[str, Any]) -> str:
    """What a stopped evaluation had by then, from the supervisor's progress.json: what its cases said
    (the holdout by its count of probes passed) and how long the submission's last call took."""
    done = progress.get("done")
    said = [printable(str(d))[:100] for d in done[:MAX_DONE_SHOWN]] if isinstance(done, list) else []
    more = f" and {len(done) - MAX_DONE_SHOWN} more" if isinstance(done, list) and len(done) > MAX_DONE_SHOWN else ""
    last = progress.get("last_call_ms")
    took = (
        f"; the submission's last call took {last / 1e3:.3g} s"
        if isinstance(last, int | float) and not isinstance(last, bool) and last > 0
        else ""
    )
    return (f"; by then: {', '.join(said)}{more}" if said else "") + took


def _private_dir(path: Path, mode: int) -> None:
    """A folder the supervisor owns: ``mode`` 0700 keeps the candidate out, 0755 lets it look in."""
    path.mkdir(parents=True, exist_ok=True)
    _own(path)
    os.chmod(path, mode)


def _own(path: Path) -> None:
    if os.geteuid() == 0:
        os.chown(path, SUPERVISOR_UID, SUPERVISOR_UID)


def _summarise(samples: list[dict[str, float]]) -> dict[str, Any]:
    if not samples:
        return {}
    keys = samples[0].keys()
    return {
        k: {
            "min": min(s[k] for s in samples),
            "median": statistics.median(s[k] for s in samples),
            "max": max(s[k] for s in samples),
        }
        for k in keys
    } | {"samples": len(samples)}
