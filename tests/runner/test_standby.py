"""Which containers a standby can run (runner.standby.fit), and the folder swap; pure, no Docker."""

from __future__ import annotations

from pathlib import Path

from kcoral.runner import standby


def _options(job: Path, **over: object) -> dict[str, object]:
    options: dict[str, object] = {
        "image": "sha256:abc",
        "command": ["python3", "main.py"],
        "environment": {"FOO": "1"},
        "working_dir": "/job/input",
        "labels": {"kcoral.job": job.name},
        "volumes": {
            str(job / "input"): {"bind": "/job/input", "mode": "ro"},
            str(job / "out"): {"bind": "/job/out", "mode": "rw"},
            "/data/code/h/tasks": {"bind": "/kcoral/kcoral/tasks", "mode": "ro"},
        },
        "mem_limit": 1 << 30,
        "cpuset_cpus": "0",
    }
    options.update(over)
    return options


def test_jobs_that_differ_only_in_what_is_handed_over_share_a_standby(tmp_path: Path) -> None:
    a, b = tmp_path / "jobs" / "A", tmp_path / "jobs" / "B"
    fa = standby.fit(_options(a), a, "python3")
    fb = standby.fit(_options(b, command=["python3", "-c", "x"], environment={}, labels={}), b, "python3")
    assert fa is not None and fb is not None and fa.key == fb.key
    assert fa.folders == (a / "input", a / "out") and fa.targets == ("/job/input", "/job/out")
    assert fa.modes == ("ro", "rw")


def test_anything_the_standby_was_started_with_is_in_the_key(tmp_path: Path) -> None:
    job = tmp_path / "jobs" / "A"
    key = standby.fit(_options(job), job, "python3").key  # type: ignore[union-attr]
    for change in ({"image": "sha256:def"}, {"mem_limit": 2 << 30}, {"cpuset_cpus": "1"}):
        assert standby.fit(_options(job, **change), job, "python3").key != key, change  # type: ignore[union-attr]
    moved = _options(job)
    moved["volumes"] = {**moved["volumes"], "/data/code/other/tasks": {"bind": "/kcoral/x", "mode": "ro"}}  # type: ignore[dict-item]
    assert standby.fit(moved, job, "python3").key != key  # type: ignore[union-attr]


def test_a_container_that_does_not_run_the_interpreter_or_mounts_a_file_of_the_job_does_not_fit(
    tmp_path: Path,
) -> None:
    job = tmp_path / "jobs" / "A"
    assert standby.fit(_options(job, command=["ncu", "python3"]), job, "python3") is None
    job.mkdir(parents=True)
    (job / "input").write_text("a file, not a folder")
    assert standby.fit(_options(job), job, "python3") is None


def test_the_swap_moves_entries_in_and_puts_the_folders_back(tmp_path: Path) -> None:
    job_in, job_out = tmp_path / "job" / "input", tmp_path / "job" / "out"
    job_in.mkdir(parents=True)
    (job_in / "a.py").write_text("x")
    (job_in / ".hidden").mkdir()
    theirs = (tmp_path / "s" / "m0", tmp_path / "s" / "m1")
    for t in theirs:
        t.mkdir(parents=True)
    standby.swap_in((job_in, job_out), theirs)
    assert sorted(p.name for p in theirs[0].iterdir()) == [".hidden", "a.py"] and list(job_in.iterdir()) == []
    (theirs[1] / "result.txt").write_text("42")  # what the job wrote
    standby.swap_back((job_in, job_out), theirs)
    assert sorted(p.name for p in job_in.iterdir()) == [".hidden", "a.py"]
    assert (job_out / "result.txt").read_text() == "42" and not theirs[0].exists()


def test_a_failed_hand_over_moves_the_entries_back(tmp_path: Path) -> None:
    job_in, job_out = tmp_path / "job" / "input", tmp_path / "job" / "out"
    job_in.mkdir(parents=True)
    (job_in / "a.py").write_text("x")
    theirs = (tmp_path / "s" / "m0", tmp_path / "s" / "m1")
    for t in theirs:
        t.mkdir(parents=True)
    standby.swap_in((job_in, job_out), theirs)
    standby.undo_swap_in((job_in, job_out), theirs)
    assert [p.name for p in job_in.iterdir()] == ["a.py"] and not job_out.exists()


def test_a_pool_closed_while_a_standby_starts_waits_for_it_and_discards_it(tmp_path: Path) -> None:
    import threading

    pool = standby.StandbyPool(tmp_path / "standby")
    release, discarded = threading.Event(), list[standby.Standby]()

    def make(folder: Path) -> standby.Standby:
        release.wait(5)
        return standby.Standby(object(), "k", folder, ())

    pool.refill("cpu0", "k", make, discarded.append)
    closer = threading.Thread(target=pool.close, args=(discarded.append,))
    closer.start()
    closer.join(0.2)
    assert closer.is_alive()  # close waits for the standby that is still starting
    release.set()
    closer.join(5)
    assert not closer.is_alive() and len(discarded) == 1 and pool.take("cpu0", "k", wait_s=0) is None


def test_a_job_waits_for_its_slots_standby_that_is_still_starting(tmp_path: Path) -> None:
    import threading

    pool = standby.StandbyPool(tmp_path / "standby")
    release = threading.Event()

    def make(folder: Path) -> standby.Standby:
        release.wait(5)
        return standby.Standby(object(), "k", folder, ())

    pool.refill("cpu0", "k", make, lambda s: None)
    threading.Timer(0.2, release.set).start()
    assert pool.take("cpu0", "k") is not None  # waited for it (up to MAKING_WAIT_S)
    assert pool.take("cpu0", "k", wait_s=0) is None  # one job per standby
    assert pool.take("cpu0", "other", wait_s=0) is None


def test_a_second_close_returns_only_when_the_first_has_discarded_everything(tmp_path: Path) -> None:
    """A server's shutdown closes the pool from two threads; the process ends after the second."""
    import threading
    import time

    pool = standby.StandbyPool(tmp_path / "standby")
    pool.refill("cpu0", "k", lambda folder: standby.Standby(object(), "k", folder, ()), lambda s: None)
    assert pool.take("cpu0", "other") is None  # waits until it is made; then it is ready, unused
    discarded: list[object] = []

    def slow_discard(s: standby.Standby) -> None:
        time.sleep(0.3)
        discarded.append(s)

    first = threading.Thread(target=pool.close, args=(slow_discard,))
    first.start()
    time.sleep(0.05)
    pool.close(slow_discard)  # the second caller
    assert len(discarded) == 1
    first.join(5)


def test_the_pool_names_the_containers_a_clean_up_must_leave(tmp_path: Path) -> None:
    """Ready and taken standbys, until the job hands its back; the leases whose standby is starting."""
    import threading
    from collections.abc import Callable
    from types import SimpleNamespace

    pool = standby.StandbyPool(tmp_path / "standby")
    release = threading.Event()

    def make(name: str, wait: bool) -> Callable[[Path], standby.Standby]:
        def made(folder: Path) -> standby.Standby:
            if wait:
                release.wait(5)
            return standby.Standby(SimpleNamespace(id=name), "k", folder, ())

        return made

    pool.refill("cpu0", "k", make("c0", False), lambda s: None)
    assert pool.take("cpu0", "other", wait_s=5) is None  # waited until it was made: ready, not taken
    pool.refill("cpu1", "k", make("c1", True), lambda s: None)
    assert pool.in_use() == ({"c0"}, {"cpu1"})
    release.set()
    taken = pool.take("cpu1", "k", wait_s=5)
    assert taken is not None and pool.in_use() == ({"c0", "c1"}, set())
    pool.handed_back(taken)
    assert pool.in_use() == ({"c0"}, set())
