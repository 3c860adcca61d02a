"""A task's whole contract as a submitter may know it before submitting (``GET /v1/tasks/ID``,
``kcoral tasks show``): each public workload's data (from the task's torch-free ``signature``), the
tolerances, the timing method with this server's settings, what the score is, the time limit, and
the packages of the image the submission runs in. The holdout appears only by its count.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from kcoral.protocol.errors import InfrastructureError
from kcoral.runner.limits import Limits
from kcoral.tasks.cases import timing_method
from kcoral.tasks.documents import TaskContract, TensorSpec, WorkloadContract
from kcoral.tasks.harness.schema import TimingMethod
from kcoral.tasks.harness.stats import MIN_HALF
from kcoral.tasks.harness.taskdef import Task

HOLDOUT = (
    "{n} secret probes, drawn per request from the server's key: other distributions, locations and "
    "spreads than the public workloads (their shapes and values are never shown). They run first; a "
    "failed probe is reported as PASS/FAIL and its kind only, and the evaluation then has no score."
)
TOLERANCE_RULE = (
    "an element fails when |out - ref| > atol * rms(ref) and |out - ref| / (|ref| + 1e-8) > rtol; a "
    "workload fails on any failing element, any NaN or inf, or an RMS error ratio rms(out - ref) / "
    "rms(ref) of at least rms. Outputs are NaN-poisoned before every call: write all of them."
)
INPUTS_READ_ONLY = " Inputs are read-only: a submission that writes into one fails."
INPUTS_WRITABLE = " A submission that writes into its inputs is told so in the report (it is judged on its outputs)."
TIMING_METHOD = (
    "The supervisor (a separate, trusted process) times every call on its own clock: from the moment "
    "it starts writing the call's inputs (fresh ones each call, drawn from a per-request secret) until "
    "it holds a copy of the outputs, with {flush} bytes of cache flushed before each call. After "
    "{warmup} s of warm-up (at least 3 calls), the baseline, the submission and an empty call are "
    "interleaved, the order alternating, until the speedup's 95% interval reaches no further than "
    "{target:.2%} of it either way (at least {min_reps} calls, and {early} before it stops early: the "
    "measurement's halves are compared first, and a change of speed between them widens the interval; "
    "at most {max_reps} or {budget} s). The "
    "empty call's time (the protocol's fixed cost) is subtracted from each of the two calls it was "
    "interleaved with, unless it is over half of a call: then the raw times are compared (a subtraction "
    "that large would magnify any difference in how the two calls are made). The submission runs on a "
    "core of its own that the judge's processes never use, and the baseline's worker on one of the "
    "judge's; an iteration in which the judge's side waited for a CPU or served interrupts is left "
    "out. Every timed call's outputs are checked against "
    "the baseline's on the same inputs. A call may take at most {call} s. Each call starts from a "
    "device that has finished all earlier work, so its time includes the host's time to launch its "
    "first work: for a submission made of many short launches that part does not grow with the work "
    "(on the H200, the KDA baseline's code run twice per call measured 0.56-0.60x, not 0.5x: about "
    "1 ms of its ~3.5 ms is launch time the second run hides behind the first's)."
)
BATCH_METHOD = (
    " This task is timed in the batch mode: each side's calls are timed {batch} at a time, back to back "
    "on {batch} fresh input sets of their own (written, and the cache flushed, before the clock starts), "
    "with one device synchronisation after the last, and every call's outputs are checked; a call's "
    "time is the batch's over {batch}, so the host's launch gaps between calls hide behind the device's "
    "queue. The same calls are then timed one at a time in the same request: a submission whose calls "
    "gain far more in a batch than one at a time (work done for other calls ahead) is flagged."
)
GRAPH_METHOD = (
    " Each side's batch is captured once in a CUDA graph after the warm-up, and every timed batch is a "
    "replay of that graph on the batch's fresh inputs (each call also alone in a graph of its own, for "
    "the one-at-a-time check): no launch from the host is timed, so a call must be capturable (no "
    "synchronisation with the host, the same work on every call); one that is not fails the evaluation."
)
SCORE = (
    "speedup per timed workload = the median, over pairs of consecutive iterations (one timing the "
    "baseline first, the other the submission: the pair's geometric mean cancels any advantage of "
    "going first or second, and a host's drift), of the baseline's time / the submission's time in "
    "the same iteration (the calls of one iteration share most of the host's noise, which the ratio "
    "cancels), with a 95% interval for that median (the order statistics a "
    "binomial count gives, no resampling) that also covers the speedup of each time-ordered half of "
    "the iterations, and both halves' own intervals when those do not meet (a host whose speed "
    "changed while it was timed gets a wider interval, never a false gain); the reported times are "
    "the medians of each side's times; the score is the speedups' geometric mean. The evaluation "
    "passes (exit 0) only when the holdout passes, every workload passes and nothing is flagged: CPU "
    "work between or before calls, a kernel time below floor_ms, a speedup above max_speedup, the GPU "
    "busy with other work."
)


#: the most bytes of a task's template that are served
MAX_TEMPLATE_BYTES = 64 * 1024


def template_path(task: Task) -> Path | None:
    """The task's template solution.py (the manifest's ``template``, default template.py, a path
    inside the task's family folder); None when it has none (a pack problem's is made: :func:`template`)."""
    if task.pack is not None:
        return None
    family = task.root.parent.resolve()
    path = (task.root / task.manifest.get("template", "template.py")).resolve()
    return path if path.is_relative_to(family) and path.is_file() else None


def template(task: Task) -> str:
    """The task's template's text (at most MAX_TEMPLATE_BYTES); "" when it has none. A pack problem's is
    its format's native submission (tasks.packs: KernelBench's ModelNew, GPU MODE's template)."""
    if task.pack is not None:
        return str(task.module().template())[:MAX_TEMPLATE_BYTES]
    path = template_path(task)
    return path.read_bytes()[:MAX_TEMPLATE_BYTES].decode(errors="replace") if path else ""


def submission_file(task: Task) -> str:
    """The file a submission's worker imports (the manifest's ``submission``, default solution.py)."""
    return Path(str(task.manifest.get("submission", "solution.py"))).name or "solution.py"


def template_source(task: Task) -> bytes | None:
    """The task's template as a submission of it is sent (its file's bytes; a pack problem's made one),
    None when it has none: what a warm-up or an A/A request evaluates (runner.warmup)."""
    if task.pack is not None:
        return template(task).encode() or None
    path = template_path(task)
    return path.read_bytes() if path is not None else None


def _specs(specs: dict[str, Any]) -> dict[str, TensorSpec]:
    return {name: TensorSpec(shape=list(shape), dtype=str(dtype)) for name, (shape, dtype) in specs.items()}


def _workload(w: dict[str, Any], sig: dict[str, Any], default_tol: dict[str, float]) -> WorkloadContract:
    """A public workload as the contract shows it: its inputs and outputs as ``sig`` (the task's
    signature for its params) builds them, its tolerance."""
    return WorkloadContract(
        id=w["id"],
        timed=bool(w.get("timed")),
        params=w["params"],
        inputs=_specs(sig["inputs"]),
        scalars=sig["scalars"],
        outputs=_specs(sig["outputs"]),
        tolerance=w.get("tolerance", default_tol),
    )


def method_text(method: TimingMethod) -> str:
    """How a task is timed, in words, with its method's figures."""
    text = TIMING_METHOD.format(
        flush=method.flush_bytes,
        warmup=method.warmup_s,
        target=method.interval_target,
        min_reps=method.min_reps,
        early=2 * 2 * MIN_HALF,
        max_reps=method.max_reps,
        budget=method.budget_s,
        call=method.call_timeout_s,
    )
    if method.batch > 1:
        text += BATCH_METHOD.format(batch=method.batch) + (GRAPH_METHOD if method.graph else "")
    return text


def task_contract(
    task: Task, limits: Limits, image: str, python: str, packages: dict[str, str], packages_error: str = ""
) -> TaskContract:
    """The contract of ``task`` on this server: its limits are the ceiling of the task's time limit,
    and its timing method is what the manifest's ``timing`` refines."""
    manifest = task.manifest
    module = task.module()
    if not hasattr(module, "signature"):
        raise InfrastructureError(f"task {task.id} has no signature(params): its contract cannot be given")
    default_tol = manifest["tolerance"]
    workloads = [_workload(w, module.signature(w["params"]), default_tol) for w in manifest["workloads"]]
    method = timing_method(limits.eval_timing, manifest)
    probes = int(manifest.get("holdout", {}).get("count", 0))
    return TaskContract(
        id=task.id,
        version=str(manifest.get("version", "")),
        description=manifest.get("description", ""),
        device=task.device,
        contract=manifest.get("contract", ""),
        timeout_s=min(task.timeout_s, limits.max_timeout_s),
        workloads=workloads,
        holdout_probes=probes,
        holdout=str(getattr(module, "holdout_rule", HOLDOUT)).format(n=probes) if probes else "none",
        tolerance=default_tol,
        tolerance_rule=str(getattr(module, "tolerance_rule", TOLERANCE_RULE))
        + (INPUTS_READ_ONLY if task.inputs_read_only else INPUTS_WRITABLE),
        timing=asdict(method),
        timing_method=method_text(method),
        score=SCORE,
        floor_ms=manifest.get("floor_ms"),
        max_speedup=manifest.get("max_speedup"),
        image=image,
        python=python,
        packages=packages,
        packages_error=packages_error,
        template=template(task),
        submission_file=submission_file(task),
        format=str(task.pack.get("format", "")) if task.pack is not None else "",
        gpu_types=list(task.gpu_types),
    )
