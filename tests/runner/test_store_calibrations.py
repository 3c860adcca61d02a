"""The job store's A/A calibrations (runner.store): each request's figures kept under its slot key and
task version, read back latest first, the keys listed; on a real SQLite file."""

from __future__ import annotations

from pathlib import Path

from kcoral.runner.store import CALIBRATION_REQUESTS, JobStore
from kcoral.tasks.calibration import AaRun, CalibrationPolicy, floors

SLOT = "cpu0+cpu1@0:0:1"
TASK = "demo/softmax"
SHA = "a" * 64


def runs(job: str, at: float, speedup: float = 0.95) -> list[AaRun]:
    return [
        AaRun("standard", job, at, speedup, 2.0, 2.0 / speedup, speedup * 0.99, speedup * 1.02),
        AaRun("wide", job, at, speedup * 1.01, 4.0, 4.0 / speedup),
    ]


def test_runs_come_back_latest_first_under_their_own_key(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    try:
        store.add_calibration(SLOT, TASK, SHA, runs("j1", 100.0, 0.94))
        store.add_calibration(SLOT, TASK, SHA, runs("j2", 200.0, 0.96))
        store.add_calibration("cpu2+cpu3@2:2:3", TASK, SHA, runs("j3", 300.0))
        store.add_calibration(SLOT, TASK, "b" * 64, runs("j4", 400.0))
        store.add_calibration(SLOT, "demo/other", SHA, runs("j5", 500.0))
        got = store.calibration_runs(SLOT, TASK, SHA)
        assert [r.job for r in got] == ["j2", "j2", "j1", "j1"]
        assert set(got) == {*runs("j1", 100.0, 0.94), *runs("j2", 200.0, 0.96)}
        assert store.calibration_runs("cpu9@-", TASK, SHA) == []
        assert store.calibration_keys() == [
            ("cpu0+cpu1@0:0:1", "demo/other", SHA),
            ("cpu0+cpu1@0:0:1", TASK, SHA),
            ("cpu0+cpu1@0:0:1", TASK, "b" * 64),
            ("cpu2+cpu3@2:2:3", TASK, SHA),
        ]
    finally:
        store.close()


def test_only_the_latest_requests_are_read_and_they_make_a_floor(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    try:
        for i in range(CALIBRATION_REQUESTS + 5):
            store.add_calibration(SLOT, TASK, SHA, runs(f"j{i:03d}", 1000.0 + i, 0.9 + 0.001 * (i % 7)))
        got = store.calibration_runs(SLOT, TASK, SHA)
        jobs = {r.job for r in got}
        assert len(jobs) == CALIBRATION_REQUESTS and len(got) == 2 * CALIBRATION_REQUESTS
        assert "j000" not in jobs and f"j{CALIBRATION_REQUESTS + 4:03d}" in jobs
        found = floors(got, now=2000.0)
        assert set(found) == {"standard", "wide"} and found["standard"].requests == CalibrationPolicy().keep
    finally:
        store.close()


def test_the_figures_outlive_a_restart(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    store.add_calibration(SLOT, TASK, SHA, runs("j1", 100.0))
    store.add_calibration(SLOT, TASK, SHA, [])  # a request without figures adds nothing
    store.close()
    store = JobStore(tmp_path)
    try:
        assert store.calibration_runs(SLOT, TASK, SHA) == runs("j1", 100.0)
    finally:
        store.close()
