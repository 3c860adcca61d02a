"""How many calls a trusted batch (TimingMethod.batch) may hold on the card it runs on.

A batch of N calls needs, per call, a buffer set for the baseline and one for the candidate (inputs,
outputs, and the supervisor's copy of the outputs) and the supervisor's fresh sample for it; the
task's manifest asks for N whatever the card. On an 80 GB H100 the pinned KDA task's batch of 8
(about 3 GB a call) and the judge's other buffers left the candidate's own graph capture no room,
and the candidate was blamed for it. The batch is therefore fitted to the device memory free once the
trusted side has warmed up, before the submission's code may run (a submission holding memory cannot
shrink the batch by it: tasks.harness.measure): its buffers may take at most :data:`SHARE` of it, the
rest left to the two workers' own calls and their captured graphs. Fewer than two calls: every call is
timed on its own.
"""

from __future__ import annotations

#: the share of the free device memory a batch's buffers may take
SHARE = 0.5


def per_call_bytes(input_bytes: int, output_bytes: int) -> int:
    """The device memory one call of a batch adds: the baseline's and the candidate's buffer sets
    (inputs, outputs and the supervisor's copy of the outputs each) and the supervisor's drawn sample."""
    return 2 * (input_bytes + 2 * output_bytes) + input_bytes


def fit_batch(asked: int, per_call: int, free: int, share: float = SHARE) -> int:
    """The calls per batch to time: ``asked`` (the task's), or fewer when ``asked`` calls of
    ``per_call`` bytes each would take more than ``share`` of ``free`` bytes; 0 (every call on its
    own) when not even two fit. ``asked`` below 2 is 0 as well."""
    if asked < 2:
        return 0
    if per_call <= 0:
        return asked
    fits = int(free * share) // per_call
    return min(asked, fits) if fits >= 2 else 0
