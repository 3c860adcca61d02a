"""The job store's A/A calibrations (runner.store): each request's figures kept under its slot key and
task version, read back latest first, the keys listed; on a real SQLite file."""

from __future__ import annotations

from pathlib import Path

from kcoral.runner.store import CALIBRATION_REQUESTS, JobStore
from kcoral.tasks.calibration import AaRun, CalibrationKey, CalibrationPolicy, floors

SLOT = "cpu0+cpu1@0:0:1"
TASK = "demo/softmax"
SHA = "a" * 64
METHOD = "m" * 64
KEY = CalibrationKey(SLOT, TASK, SHA, METHOD)


def runs(job: str, at: float, speedup: float = 0.95) -> list[AaRun]:
    return [
        AaRun("standard", job, at, speedup, 2.0, 2.0 / speedup, speedup * 0.99, speedup * 1.02),
        AaRun("wide", job, at, speedup * 1.01, 4.0, 4.0 / speedup),
    ]


def test_runs_come_back_latest_first_under_their_own_key(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    try:
        store.add_calibration(KEY, runs("j1", 100.0, 0.94))
        store.add_calibration(KEY, runs("j2", 200.0, 0.96))
        store.add_calibration(KEY._replace(slot="cpu2+cpu3@2:2:3"), runs("j3", 300.0))
        store.add_calibration(KEY._replace(task_sha256="b" * 64), runs("j4", 400.0))
        store.add_calibration(KEY._replace(task="demo/other"), runs("j5", 500.0))
        store.add_calibration(KEY._replace(method_sha256="n" * 64), runs("j6", 600.0))
        got = store.calibration_runs(KEY)
        assert [r.job for r in got] == ["j2", "j2", "j1", "j1"]
        assert set(got) == {*runs("j1", 100.0, 0.94), *runs("j2", 200.0, 0.96)}
        assert store.calibration_runs(KEY._replace(slot="cpu9@-")) == []
        assert store.calibration_keys() == [
            CalibrationKey("cpu0+cpu1@0:0:1", "demo/other", SHA, METHOD),
            CalibrationKey("cpu0+cpu1@0:0:1", TASK, SHA, METHOD),
            CalibrationKey("cpu0+cpu1@0:0:1", TASK, SHA, "n" * 64),
            CalibrationKey("cpu0+cpu1@0:0:1", TASK, "b" * 64, METHOD),
            CalibrationKey("cpu2+cpu3@2:2:3", TASK, SHA, METHOD),
        ]
    finally:
        store.close()


def test_only_the_latest_requests_are_read_and_they_make_a_floor(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    try:
        for i in range(CALIBRATION_REQUESTS + 5):
            store.add_calibration(KEY, runs(f"j{i:03d}", 1000.0 + i, 0.9 + 0.001 * (i % 7)))
        got = store.calibration_runs(KEY)
        jobs = {r.job for r in got}
        assert len(jobs) == CALIBRATION_REQUESTS and len(got) == 2 * CALIBRATION_REQUESTS
        assert "j000" not in jobs and f"j{CALIBRATION_REQUESTS + 4:03d}" in jobs
        found = floors(got, now=2000.0)
        assert set(found) == {"standard", "wide"} and found["standard"].requests == CalibrationPolicy().keep
    finally:
        store.close()


def test_the_figures_outlive_a_restart(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    store.add_calibration(KEY, runs("j1", 100.0))
    store.add_calibration(KEY, [])  # a request without figures adds nothing
    store.close()
    store = JobStore(tmp_path)
    try:
        assert store.calibration_runs(KEY) == runs("j1", 100.0)
    finally:
        store.close()
