"""The job store: one SQLite file plus a folder per job (input, raw job output, returned files, log).

SQLite errors are translated here and nowhere else. Every write is one short transaction under
a lock, so a crash leaves each job in one of its states, never between two.
"""

from __future__ import annotations

import builtins
import contextlib
import fcntl
import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from kcoral.protocol.errors import InfrastructureError, InsufficientStorage, NotFound, TooManyJobs
from kcoral.protocol.jobids import new_job_id
from kcoral.protocol.models import (
    GpuInfo,
    ImageInfo,
    JobState,
    JobTimes,
    OutputFile,
    Score,
    SpecBase,
    StepTimes,
    Verdict,
    parse_spec,
)
from kcoral.protocol.typeddata import to_data
from kcoral.runner.changes import JobChanges
from kcoral.runner.errors import disk_writes
from kcoral.runner.jobfs import remove_tree
from kcoral.runner.reserve import DiskReserve
from kcoral.tasks.calibration import AaRun, CalibrationKey

T = TypeVar("T")

#: SQLite's result code for a full disk (sqlite3.Error.sqlite_errorcode)
SQLITE_FULL = 13
#: an owner's jobs waiting to run (created or queued): what the cap of waiting jobs counts
_WAITING = "SELECT COUNT(*) FROM jobs WHERE owner=? AND state IN (?, ?)"
#: a calibration key's latest this many A/A requests are read (tasks.calibration keeps fewer of them)
CALIBRATION_REQUESTS = 50

#: Numbered schema migrations: MIGRATIONS[i] brings a database from ``PRAGMA user_version`` i to i + 1.
#: Append, never edit: a database made by any earlier kcoral opens by running the ones it lacks.
MIGRATIONS: tuple[str, ...] = (
    # 1: the jobs table, as kcoral 0.1 made it before the store kept a version (user_version 0)
    """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT UNIQUE NOT NULL,
    owner TEXT NOT NULL,
    state TEXT NOT NULL,
    spec TEXT NOT NULL,
    verdict TEXT,
    exit_code INTEGER,
    reason TEXT NOT NULL DEFAULT '',
    image TEXT,
    gpus TEXT NOT NULL DEFAULT '[]',
    slot TEXT NOT NULL DEFAULT '',
    input_sha256 TEXT NOT NULL DEFAULT '',
    input_bytes INTEGER NOT NULL DEFAULT 0,
    log_bytes INTEGER NOT NULL DEFAULT 0,
    outputs TEXT NOT NULL DEFAULT '[]',
    created REAL NOT NULL,
    queued REAL,
    started REAL,
    finished REAL
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state, seq);
""",
    # 2: one spec model per kind (protocol.models.JobSpec): drop the fields another kind's spec carried
    """
UPDATE jobs SET spec = json_remove(spec, '$.task', '$.command') WHERE json_extract(spec, '$.kind') = 'python';
UPDATE jobs SET spec = json_remove(spec, '$.argv', '$.command', '$.env') WHERE json_extract(spec, '$.kind') = 'eval';
UPDATE jobs SET spec = json_remove(spec, '$.task') WHERE json_extract(spec, '$.kind') IN ('ncu', 'iket');
""",
    # 3: the fair order asks for each owner's last start whenever jobs are queued: an index, not a scan
    """
CREATE INDEX IF NOT EXISTS jobs_owner_started ON jobs(owner, started);
""",
    # 4: when each of a job's containers ran (protocol.models.StepTimes), for its phase times
    """
ALTER TABLE jobs ADD COLUMN steps TEXT NOT NULL DEFAULT '[]';
""",
    # 5: each A/A calibration request's figures per timed workload (tasks.calibration.AaRun), by slot and task
    """
CREATE TABLE IF NOT EXISTS calibrations (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    slot TEXT NOT NULL,
    task TEXT NOT NULL,
    task_sha256 TEXT NOT NULL,
    workload TEXT NOT NULL,
    job TEXT NOT NULL,
    at REAL NOT NULL,
    speedup REAL NOT NULL,
    baseline_ms REAL NOT NULL,
    kernel_ms REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS calibrations_key ON calibrations(slot, task, task_sha256, at);
""",
    # 6: each A/A request's own interval (the floor adds only what a report's own exceeds theirs)
    """
ALTER TABLE calibrations ADD COLUMN speedup_lo REAL;
ALTER TABLE calibrations ADD COLUMN speedup_hi REAL;
""",
    # 7: evaluations as candidates (runner.evaluations): the submission's digest and the score with its
    # interval; a task's evaluations found by an index, not a scan (earlier rows: runner.evaluations.backfill)
    """
ALTER TABLE jobs ADD COLUMN submission_digest TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN speedup REAL;
ALTER TABLE jobs ADD COLUMN speedup_lo REAL;
ALTER TABLE jobs ADD COLUMN speedup_hi REAL;
CREATE INDEX IF NOT EXISTS jobs_task ON jobs(json_extract(spec, '$.task'), seq);
""",
    # 8: an A/A calibration holds for the timing method it was measured with (tasks.calibration.CalibrationKey):
    # the requests kept before carry none, so no evaluation uses them any more
    """
ALTER TABLE calibrations ADD COLUMN method_sha256 TEXT NOT NULL DEFAULT '';
DROP INDEX IF EXISTS calibrations_key;
CREATE INDEX IF NOT EXISTS calibrations_key ON calibrations(slot, task, task_sha256, method_sha256, at);
""",
)

#: a task's evaluations that candidates made (no A/A request's: the server's template), by task
_EVALUATIONS = (
    "json_extract(spec, '$.task') = ? AND json_extract(spec, '$.kind') = 'eval' "
    "AND NOT COALESCE(json_extract(spec, '$.calibration'), 0)"
)


def migrate(db: sqlite3.Connection) -> int:
    """Run the migrations this database lacks, each in its own transaction; return its version."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > len(MIGRATIONS):
        raise InfrastructureError(
            f"the job database has schema version {version}, newer than this kcoral's "
            f"{len(MIGRATIONS)}: run the kcoral that made it, or another data dir"
        )
    for number in range(version, len(MIGRATIONS)):
        db.executescript(f"BEGIN IMMEDIATE; {MIGRATIONS[number]}; PRAGMA user_version = {number + 1}; COMMIT;")
    return len(MIGRATIONS)


def _lock_data_dir(data_dir: Path) -> int:
    """A descriptor holding an exclusive lock on the data dir for as long as it stays open; an
    InfrastructureError naming the holder when another process (or store) has it."""
    path = data_dir / "kcoral.lock"
    with disk_writes(f"cannot open {path}"):
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 100, 0).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise InfrastructureError(
            f"another kcoral server ({holder}) is using the data dir {data_dir}: stop it, or use another --data-dir"
        ) from None
    with contextlib.suppress(OSError):  # who holds it is only a courtesy: a full disk must not stop a start
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
    return fd


@dataclass(frozen=True)
class JobRecord:
    """A job as the server keeps it: its spec with the environment's values. The API shows a
    protocol.models.JobView made from it (runner.api), never the record itself."""

    id: str
    owner: str
    state: JobState
    spec: SpecBase
    times: JobTimes
    verdict: Verdict | None = None
    exit_code: int | None = None
    reason: str = ""
    image: ImageInfo | None = None
    gpus: tuple[GpuInfo, ...] = ()
    slot: str = ""
    input_sha256: str = ""
    input_bytes: int = 0
    log_bytes: int = 0
    outputs: tuple[OutputFile, ...] = ()
    #: an evaluation's: sha256 over the files received, whatever their order (kcoral.protocol.submission)
    submission_digest: str = ""
    #: a timed evaluation's, once it has one
    score: Score | None = None


@dataclass(frozen=True)
class JobPaths:
    """Where one job's files live on the server."""

    root: Path

    @property
    def tar(self) -> Path:
        return self.root / "input.tar"

    @property
    def input(self) -> Path:
        return self.root / "input"

    @property
    def staging(self) -> Path:
        """An upload's large files while it arrives (runner.tarstage); gone once it is unpacked."""
        return self.root / "staging"

    @property
    def raw_out(self) -> Path:
        """Bind-mounted writable into the container as /job/out."""
        return self.root / "out"

    @property
    def outputs(self) -> Path:
        """Files checked and copied out of raw_out after the container is gone."""
        return self.root / "outputs"

    @property
    def log(self) -> Path:
        return self.root / "log"

    @property
    def judge(self) -> Path:
        """An evaluation's supervisor writes its result here (tasks.evaluate); gone once the job ends."""
        return self.root / "eval" / "judge"

    @property
    def snapshot(self) -> Path:
        """What a rerun reuses besides the submission and the image: an evaluation's task folder
        (eval/task in job folders made before kcoral 0.1's plans)."""
        earlier = self.root / "eval" / "task"
        return earlier if earlier.is_dir() else self.root / "snapshot"


@dataclass(frozen=True)
class StoreStats:
    """Aggregates of the store's jobs (:meth:`JobStore.stats`)."""

    #: (kind, state, verdict or "") -> jobs
    jobs: dict[tuple[str, str, str], int]
    #: owner -> queued jobs
    queued: dict[str, int]
    #: of finished jobs that ran: (count, sum of seconds, count at or under each bucket's bound)
    wait: tuple[int, float, list[int]]
    run: tuple[int, float, list[int]]
    input_bytes: int
    log_bytes: int
    output_bytes: int


def jobs_dir(data_dir: Path) -> Path:
    """Where the job folders of a data dir are (``JOB_ID/`` each)."""
    return data_dir / "jobs"


class JobStore:
    """One server's jobs. It holds ``kcoral.lock`` in its data dir for as long as it is open, so a
    second server on the same data dir refuses to start instead of failing the first one's jobs."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.jobs_dir = jobs_dir(data_dir)
        with disk_writes(f"cannot use the data dir {data_dir}"):
            self.jobs_dir.mkdir(parents=True, exist_ok=True)
        self._release = weakref.finalize(self, os.close, _lock_data_dir(data_dir))
        self._lock = threading.Lock()
        #: woken after each committed change of a job (runner.changes): the streams that follow it
        self.changes = JobChanges()
        try:
            self._db = sqlite3.connect(data_dir / "kcoral.sqlite3", check_same_thread=False, isolation_level=None)
            # one process (kcoral.lock says so): the WAL's index is kept in memory, not in a -shm file
            # that a start would have to make again after a clean stop removed it, which a full disk
            # does not allow
            self._db.execute("PRAGMA locking_mode=EXCLUSIVE")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            migrate(self._db)
        except sqlite3.Error as exc:
            raise InfrastructureError(f"cannot open the job database in {data_dir}: {exc}") from None
        self._db.row_factory = sqlite3.Row
        #: room kept back on the disk for verdicts (runner.reserve), made where there is room for it
        self.reserve = DiskReserve(data_dir / "kcoral.reserve")
        self.reserve.refill()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                yield self._db
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback()
                if getattr(exc, "sqlite_errorcode", None) == SQLITE_FULL:
                    raise InsufficientStorage("the server's disk is full: the job database cannot grow") from None
                raise InfrastructureError(f"job database error: {exc}") from None
            except BaseException:
                self._rollback()
                raise

    def _rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back already (a full disk)
            self._db.execute("ROLLBACK")

    def paths(self, job_id: str) -> JobPaths:
        return JobPaths(self.jobs_dir / job_id)

    def close(self) -> None:
        """Close the database and let another server use the data dir."""
        with self._lock:
            self._db.close()
        self._release()

    # --- writes -------------------------------------------------------------------------------

    def create(self, owner: str, spec: SpecBase, waiting_cap: int | None = None) -> JobRecord:
        """A new job, ``created`` (waiting for its input). With ``waiting_cap``: TooManyJobs when the
        owner has that many jobs created or queued already, counted in the same transaction as the
        insert, so simultaneous submissions cannot pass the cap together."""
        job_id = new_job_id()
        root = self.paths(job_id).root
        try:
            with self._tx() as db:
                if waiting_cap is not None:
                    waiting = db.execute(_WAITING, (owner, JobState.created, JobState.queued)).fetchone()[0]
                    if waiting >= waiting_cap:
                        raise TooManyJobs(f"you have {waiting_cap} jobs waiting already; wait for some to finish")
                db.execute(
                    "INSERT INTO jobs (id, owner, state, spec, created) VALUES (?, ?, ?, ?, ?)",
                    (job_id, owner, JobState.created, json.dumps(to_data(spec)), time.time()),
                )
                with disk_writes("cannot make the job's folder"):
                    root.mkdir(parents=True)
        except BaseException:
            remove_tree(root)
            raise
        return self.get(job_id)

    def mark_queued(self, job_id: str, sha256: str, size: int, submission_digest: str = "") -> bool:
        """Queue a job that got its input, if it is still ``created`` (not cancelled meanwhile)."""
        with self._tx() as db:
            cur = db.execute(
                "UPDATE jobs SET state=?, input_sha256=?, input_bytes=?, submission_digest=?, queued=? "
                "WHERE id=? AND state=?",
                (JobState.queued, sha256, size, submission_digest, time.time(), job_id, JobState.created),
            )
            queued = cur.rowcount == 1
        self.changes.changed(job_id)
        return queued

    def mark_running(self, job_id: str, slot: str, gpus: list[GpuInfo]) -> None:
        self._update(
            job_id,
            state=JobState.running,
            slot=slot,
            gpus=json.dumps(to_data(gpus)),
            started=time.time(),
        )

    def set_image(self, job_id: str, image: ImageInfo) -> None:
        self._update(job_id, image=json.dumps(to_data(image)))

    def finish(
        self,
        job_id: str,
        verdict: Verdict,
        exit_code: int | None = None,
        reason: str = "",
        outputs: list[OutputFile] | None = None,
        log_bytes: int | None = None,
        steps: list[StepTimes] | None = None,
        score: Score | None = None,
    ) -> None:
        fields: dict[str, object] = dict(
            state=JobState.finished, verdict=verdict, exit_code=exit_code, reason=reason, finished=time.time()
        )
        if score is not None:
            fields.update(speedup=score.speedup, speedup_lo=score.speedup_lo, speedup_hi=score.speedup_hi)
        if steps:
            fields["steps"] = json.dumps(to_data(steps))
        if outputs is not None:
            fields["outputs"] = json.dumps(to_data(outputs))
        if log_bytes is not None:
            fields["log_bytes"] = log_bytes
        self._verdict(lambda: self._update(job_id, **fields))
        self.reserve.refill()

    def finish_if(self, job_id: str, state: JobState, verdict: Verdict, reason: str) -> bool:
        """Finish the job only if it is still in ``state``; True when it was."""

        def write() -> bool:
            with self._tx() as db:
                cur = db.execute(
                    "UPDATE jobs SET state=?, verdict=?, reason=?, finished=? WHERE id=? AND state=?",
                    (JobState.finished, verdict, reason, time.time(), job_id, state),
                )
                return bool(cur.rowcount == 1)

        done = self._verdict(write)
        self.changes.changed(job_id)
        return done

    def _verdict(self, write: Callable[[], T]) -> T:
        """A verdict's write: on a full disk, once more after letting the disk's reserve go."""
        try:
            return write()
        except InsufficientStorage:
            if not self.reserve.release():
                raise
            return write()

    def add_calibration(self, key: CalibrationKey, runs: builtins.list[AaRun]) -> None:
        """Keep an A/A request's figures (tasks.calibration.aa_runs) under their key."""
        with self._tx() as db:
            db.executemany(
                "INSERT INTO calibrations (slot, task, task_sha256, method_sha256, workload, job, at, speedup, "
                "baseline_ms, kernel_ms, speedup_lo, speedup_hi) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (*key, r.workload, r.job, r.at, r.speedup, r.baseline_ms, r.kernel_ms, r.speedup_lo, r.speedup_hi)
                    for r in runs
                ],
            )

    def set_evaluation_facts(self, job_id: str, submission_digest: str, score: Score | None) -> None:
        """What an evaluation finished before the store kept them has: its digest and score, worked out
        later from its files (runner.evaluations.backfill)."""
        scores = (score.speedup, score.speedup_lo, score.speedup_hi) if score is not None else (None, None, None)
        self._update(
            job_id, submission_digest=submission_digest, speedup=scores[0], speedup_lo=scores[1], speedup_hi=scores[2]
        )

    def delete(self, job_id: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM jobs WHERE id=?", (job_id,))
        self.changes.changed(job_id)
        remove_tree(self.paths(job_id).root)

    def _update(self, job_id: str, **fields: object) -> None:
        cols = ", ".join(f"{k}=?" for k in fields)
        with self._tx() as db:
            cur = db.execute(f"UPDATE jobs SET {cols} WHERE id=?", (*fields.values(), job_id))
            if cur.rowcount != 1:
                raise NotFound(f"no job {job_id}")
        self.changes.changed(job_id)

    # --- reads --------------------------------------------------------------------------------

    def get(self, job_id: str) -> JobRecord:
        rows = self._select("WHERE id=?", (job_id,))
        if not rows:
            raise NotFound(f"no job {job_id}")
        return rows[0]

    def list(self, owner: str | None = None, limit: int = 50, before: str | None = None) -> list[JobRecord]:
        """The newest ``limit`` jobs (of ``owner``), newest first; with ``before``, those made before
        that job (nothing when it is unknown)."""
        where: builtins.list[str] = []
        args: builtins.list[object] = []
        if owner is not None:
            where.append("owner=?")
            args.append(owner)
        if before is not None:
            where.append("seq < (SELECT seq FROM jobs WHERE id=?)")
            args.append(before)
        clause = f"WHERE {' AND '.join(where)} " if where else ""
        return self._select(f"{clause}ORDER BY seq DESC LIMIT ?", (*args, limit))

    def evaluations(self, task: str, owner: str, limit: int = -1) -> builtins.list[JobRecord]:
        """``owner``'s evaluations of ``task`` (no A/A request: the server's template), newest first, at
        most ``limit`` (-1: all)."""
        return self._select(f"WHERE {_EVALUATIONS} AND owner = ? ORDER BY seq DESC LIMIT ?", (task, owner, limit))

    def count_evaluations(self, task: str, owner: str) -> int:
        """How many evaluations of ``task`` ``owner`` made (as :meth:`evaluations` lists them)."""
        return int(self._rows(f"SELECT COUNT(*) FROM jobs WHERE {_EVALUATIONS} AND owner = ?", (task, owner))[0][0])

    def scored_evaluations(self, task: str, owner: str | None = None) -> builtins.list[JobRecord]:
        """The evaluations of ``task`` (of ``owner``; None: everyone's) that passed with a score: those a
        best is chosen from (runner.evaluations.best_per_owner), oldest first."""
        where, args = f"{_EVALUATIONS} AND verdict = 'ok' AND speedup IS NOT NULL", [task]
        if owner is not None:
            where += " AND owner = ?"
            args.append(owner)
        return self._select(f"WHERE {where} ORDER BY seq", tuple(args))

    def same_submission(self, task: str, owner: str, digest: str, check: bool) -> builtins.list[JobRecord]:
        """``owner``'s evaluations of ``task`` whose submission digest is ``digest``, checks or timed ones
        as ``check`` says (a signed receipt counts them: runner.receipts), oldest first."""
        return self._select(
            f"WHERE {_EVALUATIONS} AND owner = ? AND submission_digest = ? "
            "AND COALESCE(json_extract(spec, '$.check'), 0) = ? ORDER BY seq",
            (task, owner, digest, int(check)),
        )

    def find_evaluations(self, owner: str | None, label: str = "", id_piece: str = "") -> builtins.list[JobRecord]:
        """The evaluations (of ``owner``; None: anyone's) named ``label``, or whose id or id's random
        last part starts with ``id_piece`` (hex digits and '-' only), newest first, at most 50."""
        where, args = "json_extract(spec, '$.kind') = 'eval'", []
        if label:
            where += " AND json_extract(spec, '$.label') = ?"
            args.append(label)
        if id_piece:
            where += " AND (substr(id, 1, length(?)) = ? OR substr(id, 17, length(?)) = ?)"
            args += [id_piece] * 4
        if owner is not None:
            where += " AND owner = ?"
            args.append(owner)
        return self._select(f"WHERE {where} ORDER BY seq DESC LIMIT 50", tuple(args))

    def unscored_evaluations(self) -> builtins.list[JobRecord]:
        """Finished evaluations without a submission digest: those finished before the store kept one."""
        return self._select(
            "WHERE json_extract(spec, '$.kind') = 'eval' AND state = 'finished' AND submission_digest = '' "
            "AND input_sha256 != '' ORDER BY seq",
            (),
        )

    def in_state(self, state: JobState) -> builtins.list[JobRecord]:
        return self._select("WHERE state=? ORDER BY seq", (state,))

    def last_started(self) -> dict[str, float]:
        """owner -> when that owner's most recent job started (owners whose jobs never ran: absent)."""
        try:
            with self._lock:
                rows = self._db.execute(
                    "SELECT owner, MAX(started) FROM jobs WHERE started IS NOT NULL GROUP BY owner"
                ).fetchall()
        except sqlite3.Error as exc:
            raise InfrastructureError(f"job database error: {exc}") from None
        return {str(owner): float(started) for owner, started in rows}

    def stats(self, buckets: tuple[float, ...]) -> StoreStats:
        """What /metrics says of the jobs the store holds (runner.metrics): one pass of aggregates."""
        wait, run = "(started - queued)", "(finished - started)"
        cuts = ", ".join(f"SUM({x} <= {float(b)!r})" for x in (wait, run) for b in buckets)
        try:
            with self._lock:
                db = self._db
                counts = db.execute(
                    "SELECT json_extract(spec, '$.kind'), state, COALESCE(verdict, ''), COUNT(*) FROM jobs "
                    "GROUP BY 1, 2, 3"
                ).fetchall()
                queued = db.execute("SELECT owner, COUNT(*) FROM jobs WHERE state='queued' GROUP BY owner").fetchall()
                sums = db.execute(
                    f"SELECT COUNT({wait}), TOTAL({wait}), COUNT({run}), TOTAL({run}), TOTAL(input_bytes), "
                    f"TOTAL(log_bytes), {cuts} FROM jobs WHERE state='finished'"
                ).fetchone()
                outputs = db.execute(
                    "SELECT TOTAL(json_extract(o.value, '$.size')) FROM jobs, json_each(jobs.outputs) AS o"
                ).fetchone()[0]
        except sqlite3.Error as exc:
            raise InfrastructureError(f"job database error: {exc}") from None
        n = len(buckets)
        return StoreStats(
            jobs={(str(k), str(st), str(v)): int(c) for k, st, v, c in counts},
            queued={str(owner): int(c) for owner, c in queued},
            wait=(int(sums[0]), float(sums[1]), [int(x or 0) for x in sums[6 : 6 + n]]),
            run=(int(sums[2]), float(sums[3]), [int(x or 0) for x in sums[6 + n : 6 + 2 * n]]),
            input_bytes=int(sums[4]),
            log_bytes=int(sums[5]),
            output_bytes=int(outputs or 0),
        )

    def calibration_runs(self, key: CalibrationKey) -> builtins.list[AaRun]:
        """The figures of the key's latest CALIBRATION_REQUESTS A/A requests, latest first."""
        where = "slot=? AND task=? AND task_sha256=? AND method_sha256=?"
        rows = self._rows(
            "SELECT workload, job, at, speedup, baseline_ms, kernel_ms, speedup_lo, speedup_hi FROM calibrations "
            f"WHERE {where} AND job IN (SELECT job FROM calibrations "
            f"WHERE {where} GROUP BY job ORDER BY MAX(at) DESC LIMIT ?) "
            "ORDER BY at DESC, seq",
            (*key, *key, CALIBRATION_REQUESTS),
        )
        return [AaRun(*row) for row in rows]

    def waiting(self, owner: str) -> int:
        """How many jobs of ``owner`` are created or queued (what :meth:`create`'s cap counts)."""
        return int(self._rows(_WAITING, (owner, JobState.created, JobState.queued))[0][0])

    def calibration_keys(self) -> builtins.list[CalibrationKey]:
        """Every key with A/A requests kept."""
        columns = "slot, task, task_sha256, method_sha256"
        rows = self._rows(f"SELECT DISTINCT {columns} FROM calibrations ORDER BY task, {columns}")
        return [CalibrationKey(*(str(v) for v in row)) for row in rows]

    def _rows(self, sql: str, args: tuple[object, ...] = ()) -> builtins.list[sqlite3.Row]:
        try:
            with self._lock:
                return self._db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise InfrastructureError(f"job database error: {exc}") from None

    def _select(self, where: str, args: tuple[object, ...]) -> builtins.list[JobRecord]:
        return [_to_record(r) for r in self._rows(f"SELECT * FROM jobs {where}", args)]


def _to_record(row: sqlite3.Row) -> JobRecord:
    return JobRecord(
        id=row["id"],
        owner=row["owner"],
        state=JobState(row["state"]),
        spec=parse_spec(row["spec"]),
        verdict=Verdict(row["verdict"]) if row["verdict"] else None,
        exit_code=row["exit_code"],
        reason=row["reason"],
        image=ImageInfo(**json.loads(row["image"])) if row["image"] else None,
        gpus=tuple(GpuInfo(**g) for g in json.loads(row["gpus"])),
        slot=row["slot"],
        input_sha256=row["input_sha256"],
        input_bytes=row["input_bytes"],
        log_bytes=row["log_bytes"],
        times=JobTimes(
            created=row["created"],
            queued=row["queued"],
            started=row["started"],
            finished=row["finished"],
            steps=[StepTimes(**t) for t in json.loads(row["steps"])],
        ),
        outputs=tuple(OutputFile(**o) for o in json.loads(row["outputs"])),
        submission_digest=row["submission_digest"],
        score=_score(row),
    )


def _score(row: sqlite3.Row) -> Score | None:
    if row["speedup"] is None or row["speedup_lo"] is None or row["speedup_hi"] is None:
        return None
    return Score(speedup=row["speedup"], speedup_lo=row["speedup_lo"], speedup_hi=row["speedup_hi"])
