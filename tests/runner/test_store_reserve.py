"""The store records verdicts on a full disk (runner.reserve): room kept back for them, let go when a
verdict does not fit otherwise, taken back once the disk has room again."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcoral.protocol.errors import InsufficientStorage
from kcoral.protocol.models import JobState, PythonSpec, Verdict
from kcoral.runner import reserve
from kcoral.runner.store import JobStore
from tests.conftest import mounted_tmpfs


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f:
        for size in (256 << 10, 4096, 512, 1):
            with contextlib.suppress(OSError):
                while True:
                    f.write(b"\0" * size)
    return filler


@pytest.fixture
def store(tmp_path: Path) -> Iterator[JobStore]:
    with mounted_tmpfs(tmp_path / "disk", 8) as disk:
        store = JobStore(disk / "data")
        try:
            yield store
        finally:
            store.close()


def busy_jobs(store: JobStore, count: int) -> list[str]:
    """``count`` jobs that run, and enough rows besides that the database's writes need new pages."""
    ids = []
    for i in range(count):
        job = store.create("owner", PythonSpec(argv=["m.py"], env={"PAD": "x" * 4000}))
        store.mark_queued(job.id, "0" * 64, i)
        store.mark_running(job.id, "cpu0", [])
        ids.append(job.id)
    return ids


def test_verdicts_are_recorded_on_a_full_disk_and_the_reserve_comes_back(
    store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reserve, "REFILL_EVERY_S", 0.0)
    assert store.reserve.held
    ids = busy_jobs(store, 40)
    filler = fill(store.data_dir.parent)
    with pytest.raises(InsufficientStorage):  # what anything but a verdict meets
        busy_jobs(store, 40)
    for job_id in ids:
        store.finish(job_id, Verdict.infrastructure_error, reason="the server's disk is full", log_bytes=0)
    assert all(store.get(i).state == JobState.finished for i in ids)
    assert not store.reserve.held
    assert not store.reserve.refill()  # still full
    filler.unlink()
    assert store.reserve.refill() and store.reserve.held


def test_without_its_reserve_the_store_cannot_record_them(store: JobStore) -> None:
    """The case above with the reserve let go beforehand: the check that the full disk is real."""
    ids = busy_jobs(store, 40)
    store.reserve.release()
    fill(store.data_dir.parent)
    with pytest.raises(InsufficientStorage):
        for job_id in ids:
            store.finish(job_id, Verdict.infrastructure_error, reason="the server's disk is full", log_bytes=0)
