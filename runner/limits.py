"""Every limit a job runs under, with its unit, its default and what happens when it is exceeded.
An operator sets any of them, and the connection limits below (as ``connection_NAME``), with
``kcoral serve --limit NAME=VALUE`` or ``KCORAL_LIMIT_NAME=VALUE`` (sizes take KiB, MiB, GiB);
``kcoral serve --help`` lists them with their defaults, ``/v1/health`` and ``kcoral doctor --json`` the
values a server runs with.

| limit               | unit  | default | when exceeded                                             |
|---------------------|-------|---------|-----------------------------------------------------------|
| upload_bytes        | bytes | 1 GiB   | upload refused, 413                                       |
| upload_files        | count | 20000   | upload refused, 413                                       |
| unpacked_bytes      | bytes | 2 GiB   | upload refused, 413 (sum of member sizes: zip-bomb guard) |
| timeout_s (max)     | s     | 3600    | spec refused, 400; the job's own timeout_s -> `timeout`   |
| memory_bytes        | bytes | 8 GiB   | kernel OOM kill -> verdict `memory_limit` (swap == memory)|
| pids                | count | 512     | fork/clone fail inside the job (EAGAIN)                   |
| tmpfs_bytes         | bytes | 1 GiB   | ENOSPC inside the job (/tmp, HOME lives there)            |
| shm_bytes           | bytes | 1 GiB   | ENOSPC on /dev/shm                                        |
| nofile              | count | 4096    | EMFILE inside the job                                     |
| log_bytes           | bytes | 16 MiB  | job killed -> verdict `output_limit`; log kept up to cap  |
| eval_log_bytes      | bytes | 256 KiB | an evaluation's candidate: the rest of what it prints is  |
|                     |       |         | dropped (not a breach), and the log says how much         |
| output_bytes        | bytes | 256 MiB | job killed -> verdict `output_limit`; files over budget   |
|                     |       |         | are not returned                                          |
| output_files        | count | 1000    | as output_bytes                                           |
| output_depth        | count | 32      | as output_bytes (folders nested deeper in the output dir) |
| queued_per_token    | count | 16      | submit refused, 429                                       |
| env_bytes           | bytes | 64 KiB  | spec refused, 400                                         |
| argv_bytes          | bytes | 64 KiB  | spec refused, 400                                         |
| cpus                | cores | 0 (all) | the job is throttled                                      |
| gpu_memory_slack_mib| MiB   | 64      | GPU memory left in use above the lease-time baseline after |
|                     |       |         | a job, beyond this: the GPU is drained                    |
| source_file_bytes   | bytes | 256 KiB | an evaluation's source as shown and diffed (compare, its  |
| source_bytes        | bytes | 1 MiB   | page): a file over source_file_bytes, or past source_bytes|
| source_files        | count | 200     | or source_files in all, is named as left out, not shown   |
| diff_bytes          | bytes | 256 KiB | two submissions' unified diff is cut here (``truncated``) |
| eval_wake_latency_us| us    | 0       | while an evaluation runs, the host's CPUs wake within this |
|                     |       |         | from idle (PM QoS, runner.wakeqos; 0: they poll, never     |
|                     |       |         | halt; 2000000000, the kernel's own: the host's policy)     |
| calibration_keep    | count | 20      | a slot's noise floor rests on this many of its latest A/A |
|                     |       |         | requests at most (tasks.calibration)                      |
| calibration_max_age_s | s   | 7 days  | older A/A requests no longer count for a floor            |
| calibration_confidence| ratio | 0.9   | the floor takes the A/A requests' spread at its upper     |
|                     |       |         | bound at this confidence (a few requests can spread less  |
|                     |       |         | than the slot does by chance; from 0.5 to 0.99)           |
| calibration_every_s | s     | 900     | while the server is idle, one more A/A request of a task  |
|                     |       |         | calibrated here once its latest is this old, so a floor   |
|                     |       |         | spans time (runner.recalibration; 0: never)               |

An evaluation's timing method and the judge's rules (:class:`kcoral.tasks.harness.schema.TimingMethod`,
whose defaults these are; an operator sets them as ``timing_NAME`` (``--limit timing_budget_s=60``,
``KCORAL_LIMIT_TIMING_BUDGET_S=60``), a task's manifest ``timing`` any of them for its task over those; the
server sends the whole method to the supervisor in the case file, and the receipt records it):

| field             | unit  | default | meaning                                                       |
|-------------------|-------|---------|---------------------------------------------------------------|
| warmup_s          | s     | 1.0     | untimed calls of baseline and candidate before sampling        |
| min_reps, max_reps| count | 10, 300 | timed samples per case (each: baseline, candidate, null call) |
| budget_s          | s     | 30      | sampling stops after this, with at least min_reps samples     |
| interval_target   | ratio | 0.01    | sampling stops early once the speedup's 95% interval reaches  |
|                   |       |         | no further than this share of it either way (+-1%), and not   |
|                   |       |         | before 20 samples (its halves compared)                       |
| flush_bytes       | bytes | 128 MiB | written before every call to flush the caches (inside its     |
|                   |       |         | timed window: the empty call's time, which holds it, is taken |
|                   |       |         | off; past about half a call the raw ratio is scored instead)  |
| idle_cpu_ms       | ms    | 0.25    | the candidate's median CPU per gap between its calls: over it, |
|                   |       |         | the evaluation is flagged                                     |
| idle_cpu_share    | ratio | 0.10    | its total CPU outside calls over the baseline's call time:    |
|                   |       |         | over it, flagged                                              |
| quiet_probe_ms    | ms    | 0.25    | GPU: a probe kernel slower than this means another context    |
|                   |       |         | has work queued; the call waits for a quiet GPU               |
| noisy_budget_s    | s     | 120     | when the speedup's interval is still wider than scorable_ratio |
| noisy_reps        | count | 10      | at budget_s (a busy host), sampling goes on up to this long   |
|                   |       |         | more (and noisy_reps x max_reps), until it is not             |
| scorable_ratio    | ratio | 2.0     | an interval (hi / lo) this narrow can be scored; the report   |
|                   |       |         | calls wider than 3 inconclusive (tasks.report)                |
| connect_timeout_s | s     | 180     | the candidate's worker must connect and set up within this    |
| call_timeout_s    | s     | 300     | every call must be answered within this                       |
| deadline_margin_s | s     | 5       | kept before the evaluation's deadline for its end: a call too |
|                   |       |         | slow to be measured before then FAILs its case ("too slow")   |
| disturbed_ms      | ms    | 0.1     | an iteration in which the judge's processes waited for a CPU, |
| disturbed_share   | ratio | 0.02    | or its cores served interrupts, longer than the larger of     |
|                   |       |         | these (disturbed_share of the shorter call) is left out of    |
|                   |       |         | the estimate (tasks.harness.interference)                     |
| hot_c             | C     | 80      | a GPU hotter than this when a case's sampling is to start is  |
| cool_s            | s     | 60      | let cool, this long at most (tasks.harness.gpuclock)          |
| buffer_sets       | count | 4       | each side's inputs and outputs in this many sets of buffers, a |
|                   |       |         | pair of iterations on each in turn: where one set lies in     |
|                   |       |         | memory is not one draw for a whole request                    |
| batch             | count | 0       | 2 or more: the trusted batch mode. Each side's calls are timed |
|                   |       |         | this many at a time, back to back on as many fresh input sets  |
|                   |       |         | (every set's outputs poisoned, copied and checked), one device |
|                   |       |         | synchronisation at the end: the host's launch gaps hide behind |
|                   |       |         | the device's queue. Inputs are written and caches flushed     |
|                   |       |         | before a batch's clock starts. A shorter per-call measurement |
|                   |       |         | in the same request checks it (tasks.report). 0: per call     |
| graph             | flag  | false   | (CUDA tasks, batch 2 or more) each side's batch is captured   |
|                   |       |         | once in a CUDA graph after the warm-up and the graph replayed |
|                   |       |         | on every batch's fresh inputs: no host launch gap at all is   |
|                   |       |         | timed. A call that cannot be captured fails the evaluation    |
| per_call_checks   | count | 40      | batch mode: iterations of the per-call measurement after it   |
| disturbed_limit   | ratio | 0.5     | more of a workload's iterations disturbed than this: sampled  |
|                   |       |         | on, then unmeasured (the evaluation inconclusive)             |
| protocol_dominant | ratio | 0.5     | the empty call above this share of the faster side's call:    |
|                   |       |         | the speedup is the raw ratio, not the net one                 |
| shared_core_share | ratio | 0.1     | others' work on the candidate's core during more than this of |
| shared_core_ms    | ms    | 100     | its calls, and this much in all: the workload is not scored   |
| inconclusive_ratio| ratio | 3.0     | a speedup interval wider (hi / lo): not scored, inconclusive  |
| batch_gain_limit  | ratio | 1.10    | batch mode: a batch speedup above this times the per-call     |
|                   |       |         | one's upper bound, past the slot's floor on both, is flagged  |
|                   |       |         | (work done across calls)                                      |
| uncalibrated_floor| ratio | 0.11    | a slot with no A/A calibration of the task: the noise between |
|                   |       |         | requests assumed (+-11%, the H200 pack's A/A spread), folded  |
|                   |       |         | into the interval; `kcoral calibrate TASK` measures the slot's |
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from kcoral.protocol.typeddata import DataError
from kcoral.tasks.calibration import CalibrationPolicy
from kcoral.tasks.harness.schema import TimingMethod

GiB = 1 << 30
MiB = 1 << 20
KiB = 1 << 10


@dataclass(frozen=True)
class ConnectionLimits:
    """The server's bounds on client connections (runner.connections) and request bodies."""

    #: connections open at once, all clients together
    total: int = 2000
    #: connections open at once from one client address
    per_client: int = 128
    #: seconds a connection may take to send a request's line and headers
    head_timeout_s: float = 10.0
    #: seconds a request's body may take once its head has arrived (every body but a job's upload is at
    #: most 1 MiB, runner.bodylimit); an upload (``PUT /v1/jobs/ID/input``) gets this as a grace period,
    #: then must keep up an average of ``body_min_rate``: it may take body_timeout_s plus a second per
    #: body_min_rate bytes it has sent (Apache mod_reqtimeout's ``body=20,MinRate=...``). Past it the
    #: request is answered 408 ``request_timeout`` and its connection closed. Time the server spent not
    #: reading (its buffer full, a ``100-continue`` not yet sent) is not the client's and is not counted
    body_timeout_s: float = 20.0
    #: bytes a second, on average, an upload's body must arrive at after its grace period (above)
    body_min_rate: int = 16 * KiB
    #: seconds a new connection, or a request's body, has before it is judged at a connection cap: past
    #: them a connection that has not sent its request's head, or whose body comes slower than
    #: ``body_min_rate`` on average (these seconds not counted), may be closed to admit a new one
    #: (runner.connections): a head or a body that stops never keeps a client's next request out
    grace_s: float = 1.0


@dataclass(frozen=True)
class Limits:
    upload_bytes: int = 1 * GiB
    upload_files: int = 20000
    unpacked_bytes: int = 2 * GiB
    max_timeout_s: float = 3600.0
    memory_bytes: int = 8 * GiB
    pids: int = 512
    tmpfs_bytes: int = 1 * GiB
    shm_bytes: int = 1 * GiB
    nofile: int = 4096
    log_bytes: int = 16 * MiB
    eval_log_bytes: int = 256 * KiB
    output_bytes: int = 256 * MiB
    output_files: int = 1000
    output_depth: int = 32
    queued_per_token: int = 16
    env_bytes: int = 64 * KiB
    argv_bytes: int = 64 * KiB
    cpus: float = 0.0
    gpu_memory_slack_mib: int = 64
    source_file_bytes: int = 256 * KiB
    source_bytes: int = 1 * MiB
    source_files: int = 200
    diff_bytes: int = 256 * KiB
    #: seconds between checks of the output directory while a job runs
    output_poll_s: float = 0.25
    #: while an evaluation runs, the most us a CPU of the host may take to wake from idle (runner.wakeqos:
    #: 0, cores poll instead of halting; 2000000000, the kernel's own value, the host's idle policy)
    eval_wake_latency_us: int = 0
    eval_timing: TimingMethod = TimingMethod()
    #: which A/A requests a slot's noise floor rests on, and how (``calibration_keep``, ``calibration_max_age_s``,
    #: ``calibration_confidence``)
    calibration: CalibrationPolicy = CalibrationPolicy()


#: a limit set from the environment: KCORAL_LIMIT_MEMORY_BYTES=16GiB (``kcoral serve --limit NAME=VALUE`` wins)
ENV_PREFIX = "KCORAL_LIMIT_"
#: a connection limit's name among the limits (``connection_total``, ``connection_head_timeout_s``, ...)
CONNECTION = "connection_"
#: a field of the server's timing method among the limits (``timing_budget_s``, ``timing_shared_core_share``):
#: the defaults a task's manifest ``timing`` refines (a task's mode, ``batch`` and ``graph``, is its own)
TIMING = "timing_"
#: a field of the calibration policy among the limits (``calibration_keep``, ``calibration_max_age_s``)
CALIBRATION = "calibration_"
_TASKS_OWN = ("batch", "graph")
_RATIOS = (
    "confidence",
    "interval_target",
    "idle_cpu_share",
    "scorable_ratio",
    "disturbed_share",
    "disturbed_limit",
    "protocol_dominant",
    "shared_core_share",
    "inconclusive_ratio",
    "batch_gain_limit",
)
#: limits whose 0 turns what they time off (any other limit with a default above 0 must stay above 0)
_ZERO_OFF = ("calibration_every_s",)
_SIZES = {"kib": KiB, "mib": MiB, "gib": GiB, "k": KiB, "m": MiB, "g": GiB, "b": 1}


_GROUPS: tuple[tuple[str, type], ...] = (
    ("", Limits),
    (CONNECTION, ConnectionLimits),
    (TIMING, TimingMethod),
    (CALIBRATION, CalibrationPolicy),
)


def settable() -> dict[str, tuple[int | float, str]]:
    """Every limit an operator may set, by name: its default and unit (the job limits, the connection
    limits as ``connection_NAME``, then the timing method's defaults and the judge's rules as
    ``timing_NAME``: a task's manifest may set its own over them)."""
    table: dict[str, tuple[int | float, str]] = {}
    for prefix, cls in _GROUPS:
        for f in fields(cls):
            default = getattr(cls(), f.name)
            if isinstance(default, bool) or not isinstance(default, int | float) or f.name in _TASKS_OWN:
                continue
            table[prefix + f.name] = (default, _unit(f.name))
    return table


def _unit(name: str) -> str:
    if name in _RATIOS:
        return "ratio"
    suffixes = (
        ("_bytes", "bytes"),
        ("_ms", "ms"),
        ("_us", "us"),
        ("_s", "s"),
        ("_mib", "MiB"),
        ("_rate", "bytes/s"),
        ("_c", "C"),
    )
    for suffix, unit in suffixes:
        if name.endswith(suffix):
            return unit
    return "cores" if name == "cpus" else "count"


def with_limits(values: Mapping[str, str]) -> tuple[Limits, ConnectionLimits]:
    """The job and connection limits with ``values`` (name -> text: ``8GiB``, ``30``, ``0.5``) set; a
    ValueError names the limit and what it takes."""
    table = settable()
    groups: dict[str, dict[str, int | float]] = {prefix: {} for prefix, _ in _GROUPS}
    for name, text in values.items():
        key = name.strip().lower().replace("-", "_")
        if key not in table:
            raise ValueError(f"no limit named {name!r}; the limits: {', '.join(table)}")
        default, unit = table[key]
        prefix = next((p for p, _ in _GROUPS if p and key.startswith(p)), "")
        groups[prefix][key.removeprefix(prefix)] = _parse(key, text, default, unit)
    try:
        timing = replace(TimingMethod(), **groups[TIMING])  # type: ignore[arg-type]
    except DataError as exc:  # a method that cannot be followed (min_reps above max_reps, ...)
        raise ValueError(f"limit {TIMING}{exc.where}: {exc.what}") from None
    calibration = replace(CalibrationPolicy(), **groups[CALIBRATION])  # type: ignore[arg-type]
    job = replace(Limits(), **groups[""], eval_timing=timing, calibration=calibration)  # type: ignore[arg-type]
    return job, replace(ConnectionLimits(), **groups[CONNECTION])  # type: ignore[arg-type]


def _parse(name: str, text: str, default: int | float, unit: str) -> int | float:
    raw = text.strip().lower().replace("_", "")
    scale = 1
    if unit == "bytes":
        number = raw.rstrip("kmgib")
        suffix = raw[len(number) :]
        if suffix not in ("", *_SIZES):
            raise ValueError(f"limit {name}: {text!r} is not a size (a number of bytes, or with KiB, MiB, GiB)")
        scale, raw = _SIZES.get(suffix, 1), number
    try:
        value = float(raw) * scale
    except ValueError:
        raise ValueError(f"limit {name}: {text!r} is not a number ({unit})") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and default > 0 and name not in _ZERO_OFF):
        raise ValueError(f"limit {name}: {text!r} must be {'above' if default > 0 else 'at least'} 0 ({unit})")
    if isinstance(default, int):
        if value != int(value):
            raise ValueError(f"limit {name}: {text!r} must be a whole number ({unit})")
        return int(value)
    return value


def from_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The limits set as KCORAL_LIMIT_NAME in ``environ``, by name."""
    return {k.removeprefix(ENV_PREFIX).lower(): v for k, v in environ.items() if k.startswith(ENV_PREFIX)}


def help_table() -> str:
    """The limits an operator may set, one per line: name, default, unit (``kcoral serve --help``)."""
    return "\n".join(f"{name}: {_shown(default, unit)}" for name, (default, unit) in settable().items())


def _shown(value: int | float, unit: str) -> str:
    if unit == "bytes" and value:
        for size, name in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
            if value % size == 0:
                return f"{value // size:g} {name}"
    return f"{value:g} {unit}"
