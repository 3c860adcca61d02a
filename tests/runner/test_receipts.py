"""An evaluation's receipt signed as its result is recorded (runner.receipts): the server's facts added
(label, submission digest, verdict and score, times, every evaluation of the same submission by the same
token on the task), the whole signed, the output's size and sha256 those of the signed file; a job
without a receipt, or with one that cannot be read, left as it is. GET /v1/keys without a token. A real
SQLite store and real keys; no Docker."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from kcoral.protocol.models import EvalSpec, GpuInfo, JobState, OutputFile, PythonSpec, Score, Verdict
from kcoral.protocol.receipts import SIGNATURE, read_keys, verify
from kcoral.runner.app import create_app
from kcoral.runner.plan import RunResult
from kcoral.runner.receipt_keys import KeyRing, keys_dir
from kcoral.runner.receipts import LISTED_REPEATS, seal
from kcoral.runner.settings import Settings
from kcoral.runner.store import JobStore
from kcoral.tasks.documents import Receipt, parse_receipt
from tests.runner.fake_executor import fake_services

TASK = "demo/softmax"
DIGEST = "d" * 64


@pytest.fixture
def store(tmp_path: Path) -> Iterator[JobStore]:
    s = JobStore(tmp_path / "data")
    yield s
    s.close()


@pytest.fixture
def keys(tmp_path: Path) -> KeyRing:
    return KeyRing.open(keys_dir(tmp_path / "data"))


def score(speedup: float) -> Score:
    return Score(speedup=speedup, speedup_lo=speedup - 0.02, speedup_hi=speedup + 0.02)


def evaluation(
    store: JobStore, owner: str = "alice", digest: str = DIGEST, check: bool = False, task: str = TASK
) -> str:
    job = store.create(owner, EvalSpec(task=task, label="softmax_v2", check=check))
    store.mark_queued(job.id, "t" * 64, 10, digest)
    return job.id


def earlier(store: JobStore, speedup: float | None, **kwargs: object) -> str:
    job_id = evaluation(store, **kwargs)  # type: ignore[arg-type]
    store.finish(job_id, Verdict.ok, score=score(speedup) if speedup is not None else None)
    return job_id


def running_with_receipt(store: JobStore) -> tuple[str, RunResult]:
    """An evaluation that is running, its judge's receipt written among its outputs, and its result."""
    job_id = evaluation(store)
    gpu = GpuInfo(index=0, uuid="GPU-1234", name="NVIDIA H200", memory_total_mib=143771, driver="570.1")
    store.mark_running(job_id, "gpu0", [gpu])
    receipt = Receipt(
        job=job_id,
        task=TASK,
        task_version="1",
        task_sha256="a" * 64,
        manifest_sha256="b" * 64,
        image="sha256:" + "c" * 64,
        submission_sha256="t" * 64,
        harness_version="0123456789abcdef",
        judge_code_sha256="e" * 64,
        gpus=[{"index": 0, "uuid": "GPU-1234", "name": "NVIDIA H200", "driver": "570.1"}],
        finished=1700000042.5,
    )
    outputs = store.paths(job_id).outputs
    outputs.mkdir(parents=True)
    data = json.dumps(receipt.document(), indent=1).encode()
    (outputs / Receipt.FILE).write_bytes(data)
    (outputs / "report.json").write_text("{}")
    files = [
        OutputFile(path="report.json", size=2, sha256=hashlib.sha256(b"{}").hexdigest()),
        OutputFile(path=Receipt.FILE, size=len(data), sha256=hashlib.sha256(data).hexdigest()),
    ]
    return job_id, RunResult(Verdict.ok, 0, "", 0, files, score=score(1.004))


def test_a_receipt_is_signed_with_the_servers_facts_and_counts_the_same_submissions_evaluations(
    store: JobStore, keys: KeyRing
) -> None:
    first, second = earlier(store, 0.977), earlier(store, 0.963)
    earlier(store, 2.0, digest="f" * 64)  # another submission
    earlier(store, 3.0, owner="bob")  # another token
    earlier(store, None, check=True)  # a check of it: not a timed evaluation
    earlier(store, 4.0, task="demo/other")  # another task
    job_id, result = running_with_receipt(store)
    sealed = seal(store, keys, job_id, result)

    path = store.paths(job_id).outputs / Receipt.FILE
    data = path.read_bytes()
    entry = next(o for o in sealed.outputs if o.path == Receipt.FILE)
    assert (entry.size, entry.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    assert [o.path for o in sealed.outputs] == ["report.json", Receipt.FILE] and sealed.verdict is Verdict.ok
    found = verify(data, keys.public().keys)
    assert found.valid, found.reason
    receipt = parse_receipt(data)  # what every client reads of it still reads
    job = store.get(job_id)
    assert receipt.server == keys.server and receipt.label == "softmax_v2" and receipt.submission_digest == DIGEST
    assert receipt.verdict is Verdict.ok and receipt.score == score(1.004)
    assert receipt.times == {
        "created": job.times.created,
        "queued": job.times.queued,
        "started": job.times.started,
        "finished": 1700000042.5,
    }
    assert receipt.manifest_sha256 == "b" * 64 and receipt.judge_code_sha256 == "e" * 64
    assert receipt.signature is not None and receipt.signature["key_id"] == keys.current.key_id
    same = receipt.same_submission
    assert same is not None and same.count == 3
    assert [(r.job, r.score.speedup if r.score else None) for r in same.evaluations] == [
        (first, 0.977),
        (second, 0.963),
        (job_id, 1.004),
    ]
    assert same.evaluations[-1].state is JobState.finished and same.evaluations[-1].finished == 1700000042.5


def test_a_receipt_lists_the_newest_repeats_and_counts_them_all(store: JobStore, keys: KeyRing) -> None:
    for _ in range(LISTED_REPEATS + 2):
        earlier(store, 1.0)
    job_id, result = running_with_receipt(store)
    seal(store, keys, job_id, result)
    same = parse_receipt((store.paths(job_id).outputs / Receipt.FILE).read_bytes()).same_submission
    assert same is not None and same.count == LISTED_REPEATS + 3 and len(same.evaluations) == LISTED_REPEATS
    assert same.evaluations[-1].job == job_id


def test_jobs_without_a_receipt_and_unreadable_receipts_are_left_as_they_are(
    store: JobStore, keys: KeyRing, caplog: pytest.LogCaptureFixture
) -> None:
    python = store.create("alice", PythonSpec(argv=["m.py"]))
    result = RunResult(Verdict.ok, 0, "", 0, [OutputFile(path=Receipt.FILE, size=1, sha256="x")])
    assert seal(store, keys, python.id, result) is result  # a python job's receipt.json is its own file
    job_id, result = running_with_receipt(store)
    assert seal(store, keys, job_id, RunResult(Verdict.timeout)) == RunResult(Verdict.timeout)
    path = store.paths(job_id).outputs / Receipt.FILE
    path.write_text('{"job": 1}')
    with caplog.at_level(logging.ERROR, logger="kcoral.receipts"):
        assert seal(store, keys, job_id, result) is result
    assert path.read_text() == '{"job": 1}' and "its receipt stays unsigned: Receipt: job" in caplog.text


def test_v1_keys_answers_without_a_token_and_verifies_what_the_server_signs(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {'a' * 16}\n")
    data = tmp_path / "data"
    settings = Settings(data_dir=data, gpus="none", tokens_file=tokens)
    app = create_app(settings, fake_services(settings))  # no engine: the routes and schema only
    client = TestClient(app)
    answer = client.get("/v1/keys")
    assert answer.status_code == 200, answer.text
    listed = answer.json()
    ring = app.state.services.keys
    assert listed["server"] == ring.server and [k["key_id"] for k in listed["keys"]] == [ring.current.key_id]
    assert listed["keys"][0]["current"] is True and "PRIVATE" not in answer.text
    statement = {"job": "x", "server": ring.server}
    receipt = json.dumps({**statement, SIGNATURE: ring.sign(statement)})
    assert verify(receipt, read_keys(answer.content)).valid
    assert client.get("/v1/jobs").status_code == 401  # the other routes still want one
    schema = app.openapi()["paths"]["/v1/keys"]["get"]
    assert schema["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ServerKeys"
    }
