"""The job store's numbered migrations (runner.store): a database made by the previous version opens,
keeps its jobs and gets the current schema version; one made by a newer kcoral is refused."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from kcoral.protocol.errors import InfrastructureError
from kcoral.protocol.models import EvalSpec, NcuSpec, PythonSpec, Verdict
from kcoral.protocol.submission import tar_digest
from kcoral.runner.evaluations import backfill, history
from kcoral.runner.store import MIGRATIONS, JobStore
from kcoral.tasks.calibration import AaRun, CalibrationKey
from tests.conftest import make_tar
from tests.tasks.test_documents import REPORT

#: the schema kcoral 0.1 created (no user_version), copied from runner/store.py as it stood then
V0_SCHEMA = """
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
"""


def make_v0(data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(data_dir / "kcoral.sqlite3")
    db.executescript(V0_SCHEMA)
    db.execute(
        "INSERT INTO jobs (id, owner, state, spec, created) VALUES (?, ?, ?, ?, ?)",
        ("20261130-000000-abcdef01", "local", "finished", '{"kind": "python", "argv": ["a.py"], "timeout_s": 60}', 1.0),
    )
    db.commit()
    assert db.execute("PRAGMA user_version").fetchone()[0] == 0
    db.close()


def test_a_previous_version_database_opens_and_keeps_its_jobs(tmp_path: Path) -> None:
    make_v0(tmp_path)
    store = JobStore(tmp_path)
    assert [j.id for j in store.list()] == ["20261130-000000-abcdef01"]
    store.close()  # the server holds the database alone while it is open (locking_mode=EXCLUSIVE)
    version = sqlite3.connect(tmp_path / "kcoral.sqlite3").execute("PRAGMA user_version").fetchone()[0]
    assert version == len(MIGRATIONS)


def test_a_new_database_gets_the_current_version(tmp_path: Path) -> None:
    JobStore(tmp_path).close()
    version = sqlite3.connect(tmp_path / "kcoral.sqlite3").execute("PRAGMA user_version").fetchone()[0]
    assert version == len(MIGRATIONS)


def test_a_newer_database_is_refused(tmp_path: Path) -> None:
    JobStore(tmp_path).close()
    db = sqlite3.connect(tmp_path / "kcoral.sqlite3")
    db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    db.commit()
    db.close()
    with pytest.raises(InfrastructureError, match="newer than this kcoral"):
        JobStore(tmp_path)


#: specs as kcoral 0.1 stored them: one model for every kind, every field present
V1_SPECS = {
    "py": '{"kind": "python", "argv": ["a.py"], "command": [], "task": null, "image": null, "env": {"A": "1"},'
    ' "timeout_s": 60.0, "gpus": 0}',
    "ev": '{"kind": "eval", "argv": [], "command": [], "task": "demo/softmax", "image": "sha256:ab", "env": {},'
    ' "timeout_s": 300.0, "gpus": 1}',
    "nc": '{"kind": "ncu", "argv": ["-c", "1"], "command": ["python", "x.py"], "task": null, "image": null,'
    ' "env": {}, "timeout_s": 600.0, "gpus": 1}',
}


def test_version_1_specs_become_one_model_per_kind(tmp_path: Path) -> None:
    """Migration 2: a database with kcoral 0.1's all-fields specs opens, and each spec parses as its
    kind's model (PythonSpec, EvalSpec, NcuSpec refuse the other kinds' fields)."""
    make_v0(tmp_path)
    db = sqlite3.connect(tmp_path / "kcoral.sqlite3")
    for job_id, spec in V1_SPECS.items():
        db.execute(
            "INSERT INTO jobs (id, owner, state, spec, created) VALUES (?, 'local', 'finished', ?, 2.0)", (job_id, spec)
        )
    db.commit()
    db.close()
    store = JobStore(tmp_path)
    py, ev, nc = store.get("py").spec, store.get("ev").spec, store.get("nc").spec
    assert isinstance(py, PythonSpec) and py.argv == ["a.py"] and py.env == {"A": "1"} and py.gpus == 0
    assert isinstance(ev, EvalSpec) and ev.task == "demo/softmax" and ev.image == "sha256:ab"
    assert isinstance(nc, NcuSpec) and nc.command == ["python", "x.py"] and nc.argv == ["-c", "1"]


def test_the_open_store_holds_the_database_alone(tmp_path: Path) -> None:
    """One server per data dir (kcoral.lock): the database is opened in exclusive locking mode, so
    its WAL index lives in memory and a start never has to make a -shm file (a full disk could not)."""
    store = JobStore(tmp_path)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        sqlite3.connect(tmp_path / "kcoral.sqlite3", timeout=0.1).execute("SELECT COUNT(*) FROM jobs").fetchone()
    assert not (tmp_path / "kcoral.sqlite3-shm").exists()
    store.close()
    assert sqlite3.connect(tmp_path / "kcoral.sqlite3").execute("SELECT COUNT(*) FROM jobs").fetchone() == (0,)


def test_version_4_gains_the_calibrations_table(tmp_path: Path) -> None:
    """Migration 5: a database of the version before (jobs only) opens with its jobs, and keeps A/A
    calibrations (runner.store.JobStore.add_calibration) from then on."""
    make_v0(tmp_path)
    db = sqlite3.connect(tmp_path / "kcoral.sqlite3", isolation_level=None)
    for number in range(4):
        db.executescript(f"BEGIN; {MIGRATIONS[number]}; PRAGMA user_version = {number + 1}; COMMIT;")
    assert db.execute("SELECT name FROM sqlite_master WHERE name LIKE 'calibrations%'").fetchall() == []
    db.close()
    store = JobStore(tmp_path)
    try:
        assert [j.id for j in store.list()] == ["20261130-000000-abcdef01"]
        assert store.calibration_keys() == []
        run = AaRun("standard", "20261130-000000-abcdef01", 5.0, 0.95, 2.0, 2.1)
        key = CalibrationKey("cpu0+cpu1@0:0:1", "demo/softmax", "a" * 64, "m" * 64)
        store.add_calibration(key, [run])
        assert store.calibration_runs(key) == [run]
    finally:
        store.close()
    db = sqlite3.connect(tmp_path / "kcoral.sqlite3")
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    indexes = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert "calibrations_key" in indexes


def _with_an_old_aa_row(tmp_path: Path, version: int) -> None:
    """A database at ``version`` with one A/A figure (slot s, task t, content h) as that version kept it."""
    make_v0(tmp_path)
    db = sqlite3.connect(tmp_path / "kcoral.sqlite3", isolation_level=None)
    for number in range(version):
        db.executescript(f"BEGIN; {MIGRATIONS[number]}; PRAGMA user_version = {number + 1}; COMMIT;")
    db.execute(
        "INSERT INTO calibrations (slot, task, task_sha256, workload, job, at, speedup, baseline_ms, kernel_ms) "
        "VALUES ('s', 't', 'h', 'standard', 'j1', 5.0, 0.95, 2.0, 2.1)"
    )
    db.close()


def test_version_5_calibrations_are_kept_without_their_own_intervals(tmp_path: Path) -> None:
    """Migration 6: A/A figures stored before each request's own interval was kept read back with none
    (the floor then widens in quadrature: tasks.calibration.widen); new ones keep theirs."""
    _with_an_old_aa_row(tmp_path, 5)
    store = JobStore(tmp_path)
    try:
        new = AaRun("standard", "j2", 6.0, 1.0, 2.0, 2.0, 0.99, 1.02)
        store.add_calibration(CalibrationKey("s", "t", "h", ""), [new])
        assert store.calibration_runs(CalibrationKey("s", "t", "h", "")) == [
            new,
            AaRun("standard", "j1", 5.0, 0.95, 2.0, 2.1),
        ]
    finally:
        store.close()


def test_version_6_evaluations_read_back_and_get_their_digest_and_score(tmp_path: Path) -> None:
    """Migration 7: evaluations finished before the store kept their submission digest and score read
    back in a history (no label: their specs had none), and get both from the files kept with them
    (runner.evaluations.backfill: the input tar, report.json); one without its files keeps none."""
    make_v0(tmp_path)
    db = sqlite3.connect(tmp_path / "kcoral.sqlite3", isolation_level=None)
    for number in range(6):
        db.executescript(f"BEGIN; {MIGRATIONS[number]}; PRAGMA user_version = {number + 1}; COMMIT;")
    spec = '{"kind": "eval", "task": "demo/softmax", "image": null, "timeout_s": 300.0, "gpus": 1, "check": false}'
    report = json.dumps({**REPORT, "passed": 2}).encode()
    outputs = json.dumps([{"path": "report.json", "size": len(report), "sha256": hashlib.sha256(report).hexdigest()}])
    for job_id, at in (("20261130-000001-aaaaaaa1", 3.0), ("20261130-000002-aaaaaaa2", 4.0)):
        db.execute(
            "INSERT INTO jobs (id, owner, state, spec, verdict, exit_code, input_sha256, input_bytes, outputs, "
            "created, queued, started, finished) VALUES (?, 'local', 'finished', ?, 'ok', 0, 'ab', 10, ?, ?, ?, ?, ?)",
            (job_id, spec, outputs, at, at, at, at),
        )
    db.close()
    kept = tmp_path / "jobs" / "20261130-000001-aaaaaaa1"
    (kept / "outputs").mkdir(parents=True)
    (kept / "outputs" / "report.json").write_bytes(report)
    (kept / "input.tar").write_bytes(make_tar({"solution.py": "def setup(data): ...\n"}))
    store = JobStore(tmp_path)
    try:
        old = history(store, "local", "demo/softmax", 10)
        assert [(e.id, e.label, e.submission_digest, e.score) for e in old.evaluations] == [
            ("20261130-000002-aaaaaaa2", "", "", None),
            ("20261130-000001-aaaaaaa1", "", "", None),
        ]
        assert old.best is None and old.evaluations[0].verdict is Verdict.ok
        assert backfill(store) == 2
        new = history(store, "local", "demo/softmax", 10)
        gone, whole = new.evaluations
        assert (gone.submission_digest, gone.score) == ("", None)  # its files are not kept
        assert whole.submission_digest == tar_digest(kept / "input.tar") and whole.score is not None
        assert (whole.score.speedup, whole.score.speedup_lo, whole.score.speedup_hi) == (2.0, 1.9, 2.1)
        assert new.best is not None and new.best.id == whole.id and whole.best
        assert backfill(store) == 1  # the one without its files is looked at again; the other is done
    finally:
        store.close()


def test_version_7_calibrations_name_no_timing_method(tmp_path: Path) -> None:
    """Migration 8: A/A figures kept before a calibration named its timing method come back under the
    method "" (tasks.calibration.CalibrationKey), which no evaluation's method digest is: none uses them."""
    _with_an_old_aa_row(tmp_path, 7)
    store = JobStore(tmp_path)
    try:
        assert store.calibration_keys() == [CalibrationKey("s", "t", "h", "")]
        assert store.calibration_runs(CalibrationKey("s", "t", "h", "m" * 64)) == []
    finally:
        store.close()
