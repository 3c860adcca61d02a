"""Co-tenancy (issue 8, class 8; issue 29): each slot runs on its own CPU cores, so a second job loading
the host cannot slow the calls an evaluation times; an evaluation takes cores enough to keep the
candidate off the judge's (here, where each slot has one core, both slots), so it never runs on a
core a co-tenant holds."""

from __future__ import annotations

import time

from tests.attacks.judging import assert_honest, evaluate_scored
from tests.conftest import RunningServer

AFFINITY = "import os, time; print('CORES', sorted(os.sched_getaffinity(0))); time.sleep(2)"
BURN = (
    "import threading, time\n"
    "def burn():\n    end = time.time() + 3\n    while time.time() < end: pass\n"
    "ts = [threading.Thread(target=burn) for _ in range(4)]\n[t.start() for t in ts]\n"
    "print('BURNING', flush=True)\n"
    "[t.join() for t in ts]\n"
)


def test_concurrent_jobs_get_disjoint_cores(server: RunningServer) -> None:
    a = server.submit({"a.py": AFFINITY}, ["a.py"])
    b = server.submit({"a.py": AFFINITY}, ["a.py"])
    cores = []
    for job in (a, b):
        server.wait(job["id"])
        line = next(x for x in server.log(job["id"]).splitlines() if x.startswith("CORES"))
        cores.append(set(eval(line.removeprefix("CORES "))))  # noqa: S307 - a list of ints we printed
    assert cores[0] and cores[1] and not (cores[0] & cores[1]), cores


def test_an_evaluation_never_shares_a_core_with_a_co_tenant(server: RunningServer) -> None:
    burner = server.submit({"burn.py": BURN}, ["burn.py"], timeout_s=150)
    deadline = time.monotonic() + 60
    while "BURNING" not in server.log(burner["id"]):
        assert time.monotonic() < deadline, "the burner never started"
        time.sleep(0.2)
    job, report, _ = evaluate_scored(server, "honest")  # waits for the burner's slot: it needs both
    assert_honest(job, report)
    burnt = server.wait(burner["id"], timeout=60)
    assert burnt["verdict"] == "ok" and job["slot"] == "cpu0,cpu1", (burnt, job)
    assert job["times"]["started"] >= burnt["times"]["finished"], (burnt["times"], job["times"])
