"""An evaluation's receipt, signed: the server that ran the job adds what it knows beyond the judge (its
id, the candidate's label and submission digest, the verdict and score, the job's times, and every
evaluation of the same submission by the same token on the task), then signs the whole with its key
(runner.receipt_keys; the statement and its check: kcoral.protocol.receipts).

:func:`seal` is a step of the scheduler's finish, before the result is recorded, on the front end for a
cluster host's job too (whose outputs it has copied by then). A receipt that cannot be signed (not
readable as one, the disk full) stays as the judge wrote it, unsigned, and the failure is logged: a job's
verdict never depends on its receipt's signature.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import replace
from pathlib import Path

from kcoral.protocol.errors import KcoralError
from kcoral.protocol.models import EvalSpec, JobState, OutputFile
from kcoral.protocol.receipts import SIGNATURE
from kcoral.runner import jobfs
from kcoral.runner.errors import disk_writes
from kcoral.runner.plan import RunResult
from kcoral.runner.receipt_keys import KeyRing
from kcoral.runner.store import JobRecord, JobStore
from kcoral.tasks.documents import DocumentError, Receipt, Repeat, SameSubmission, parse_receipt

log = logging.getLogger("kcoral.receipts")

#: the most of a receipt.json that is read to sign it
RECEIPT_BYTES = 64 << 20
#: the most evaluations of the same submission a receipt lists, the newest (it counts them all)
LISTED_REPEATS = 100


def seal(store: JobStore, keys: KeyRing, job_id: str, result: RunResult) -> RunResult:
    """``result`` with its receipt signed (the output's size and sha256 those of the signed file);
    ``result`` as it is when the job left no receipt."""
    if not any(o.path == Receipt.FILE for o in result.outputs):
        return result
    try:
        job = store.get(job_id)
        if not isinstance(job.spec, EvalSpec):
            return result
        paths = store.paths(job_id)
        receipt = parse_receipt(jobfs.read_file(paths.outputs, Receipt.FILE, RECEIPT_BYTES))
        statement = statement_for(receipt, job, result, store, keys.server).document()
        data = json.dumps({**statement, SIGNATURE: keys.sign(statement)}, indent=1).encode()
        with disk_writes("the signed receipt could not be kept"):
            _replace(paths.outputs / Receipt.FILE, data)
    except (KcoralError, jobfs.UnsafeFile, DocumentError, ValueError) as exc:
        why = exc.message if isinstance(exc, KcoralError) else str(exc)
        log.error("job %s: its receipt stays unsigned: %s", job_id, why, extra={"job": job_id})
        return result
    signed = OutputFile(path=Receipt.FILE, size=len(data), sha256=hashlib.sha256(data).hexdigest())
    return replace(result, outputs=[signed if o.path == Receipt.FILE else o for o in result.outputs])


def statement_for(receipt: Receipt, job: JobRecord, result: RunResult, store: JobStore, server: str) -> Receipt:
    """The judge's receipt with the server's facts added: what is signed."""
    spec = job.spec
    assert isinstance(spec, EvalSpec)  # seal's check
    times = {"created": job.times.created, "queued": job.times.queued, "started": job.times.started}
    return receipt.but(
        server=server,
        label=spec.label,
        submission_digest=job.submission_digest,
        verdict=result.verdict,
        score=result.score,
        times={k: v for k, v in times.items() if v is not None} | {"finished": receipt.finished},
        same_submission=same_submission(store, job, result, receipt.finished),
    )


def same_submission(store: JobStore, job: JobRecord, result: RunResult, finished: float) -> SameSubmission:
    """Every evaluation of ``job``'s submission digest by its owner on its task (of its kind: timed, or
    checks), ``job`` itself as it ends now with ``result``."""
    spec = job.spec
    assert isinstance(spec, EvalSpec)
    found = store.same_submission(spec.task, job.owner, job.submission_digest, spec.check)
    found = found if job.submission_digest else []
    this = Repeat(job=job.id, state=JobState.finished, verdict=result.verdict, score=result.score, finished=finished)
    rows = [this if r.id == job.id else _repeat(r) for r in found]
    if job.id not in {r.id for r in found}:
        rows.append(this)
    return SameSubmission(count=len(rows), evaluations=rows[-LISTED_REPEATS:])


def _repeat(job: JobRecord) -> Repeat:
    return Repeat(job=job.id, state=job.state, verdict=job.verdict, score=job.score, finished=job.times.finished)


def _replace(path: Path, data: bytes) -> None:
    """``path``'s bytes replaced by ``data`` at once (written whole under another name, then renamed)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        partial.write_bytes(data)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
