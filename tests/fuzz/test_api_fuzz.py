"""Property-based fuzzing of the HTTP API with schemathesis, against a live server's own /openapi.json.

A real server (uvicorn on loopback, the real Docker engine, a real SQLite file: tests.conftest's
``server_factory``) gets schema-driven requests in two phases:

- stateless: for every operation, positive cases from schemathesis' strategies, and negative ones
  where there is something to make invalid (a query parameter, a JSON body);
- stateful: schemathesis' state machine, following OpenAPI links that this file adds to its copy of
  the schema (a job's id, from its creation or the job list, feeds its upload, status, log, outputs,
  cancel and rerun).

Every answer is held to: no status >= 500; an error (>= 400) is JSON with exactly the keys
{"error", "message"}; schemathesis' not_a_server_error, status_code_conformance,
content_type_conformance and response_schema_conformance checks; and no server log record carries a
traceback. Findings are collected over the whole run (a run does not stop at the first) and
reported together, each with its request as a curl command, the answer, and the logged traceback.

What the fuzzer is given beyond the served schema helps it past the first 404 or 400, never changes
what an answer is held to: the links; a tar body for PUT .../input (the route reads the raw body; the
served schema documents none), about half of them valid tars, so that jobs run and end; a narrowed
POST /v1/jobs (plausible_schema: python jobs this server takes), for the state machine and half the
stateless submissions; and, for half the stateless cases of an operation on a job, the id of a job
made beforehand (one finished, with a log and an output file; one waiting for its upload).

The run is bounded (a few hundred requests, seconds of jobs) and repeatable: fixed hypothesis seeds,
no example database, hypothesis' caches under tmp_path. bench/fuzz.py is the same harness for thousands of requests.
"""

from __future__ import annotations

import copy
import itertools
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx
import hypothesis
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir
from hypothesis.errors import Flaky
from schemathesis import Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.transport.serialization import serialize_binary

from kcoral.runner.limits import Limits
from tests.conftest import RunningServer, make_tar

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent

#: the hypothesis seed of a run (of its first round)
SEED = 20261201
#: schemathesis' own checks every response is held to (those of the installed version)
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
#: the CI run: examples per operation and generation mode (stateless), scenarios and steps (stateful)
CI_EXAMPLES = 15
CI_SCENARIOS = 30
CI_STEPS = 6
#: how long a `follow` of a job that has not finished may stay silent before the client stops reading
FOLLOW_READ_TIMEOUT_S = 1.0
#: what a fuzzed job may ask for: a job is cheap and ends soon, whatever argv the fuzzer made
FUZZ_LIMITS = Limits(max_timeout_s=10, queued_per_token=64, memory_bytes=256 << 20, pids=64)
#: the output file and log line of the seeded finished job
SEED_OUTPUT = "o.txt"
SEED_SCRIPT = (
    "import os; print('seeded'); open(os.path.join(os.environ['KCORAL_OUTPUT_DIR'], 'o.txt'), 'w').write('out')"
)
UPLOAD = "application/x-tar"


# ----- the schema the fuzzer works from


def operation_id(raw: dict[str, Any], method: str, path: str) -> str:
    return str(raw["paths"][path][method]["operationId"])


#: where a JobView answer leads: (link name, method, path, {parameter: runtime expression})
JOB_LINKS = [
    ("GetJob", "get", "/v1/jobs/{job_id}"),
    ("UploadInput", "put", "/v1/jobs/{job_id}/input"),
    ("JobLog", "get", "/v1/jobs/{job_id}/log"),
    ("ListOutputs", "get", "/v1/jobs/{job_id}/outputs"),
    ("CancelJob", "post", "/v1/jobs/{job_id}/cancel"),
    ("RerunJob", "post", "/v1/jobs/{job_id}/rerun"),
]
#: the answers that are one JobView: (method, path, status)
JOB_VIEW_ANSWERS = [
    ("post", "/v1/jobs", "201"),
    ("put", "/v1/jobs/{job_id}/input", "200"),
    ("get", "/v1/jobs/{job_id}", "200"),
    ("post", "/v1/jobs/{job_id}/cancel", "200"),
    ("post", "/v1/jobs/{job_id}/rerun", "201"),
]


def fuzz_schema(served: dict[str, Any]) -> dict[str, Any]:
    """A copy of the served schema with links between the operations and a body for the upload."""
    raw = copy.deepcopy(served)
    paths = raw["paths"]
    for method, path, status in JOB_VIEW_ANSWERS:
        links = paths[path][method]["responses"][status].setdefault("links", {})
        for name, target_method, target_path in JOB_LINKS:
            links[name] = {
                "operationId": operation_id(raw, target_method, target_path),
                "parameters": {"job_id": "$response.body#/id"},
            }
    get_job = paths["/v1/jobs/{job_id}"]["get"]["responses"]["200"]["links"]
    get_job["GetOutput"] = {
        "operationId": operation_id(raw, "get", "/v1/jobs/{job_id}/outputs/{path}"),
        "parameters": {"job_id": "$response.body#/id", "path": "$response.body#/outputs/0/path"},
    }
    listing = paths["/v1/jobs"]["get"]["responses"]["200"].setdefault("links", {})
    for name, target_method, target_path in JOB_LINKS:
        listing[f"First{name}"] = {
            "operationId": operation_id(raw, target_method, target_path),
            "parameters": {"job_id": "$response.body#/0/id"},
        }
    paths["/v1/jobs/{job_id}/input"]["put"]["requestBody"] = {
        "required": True,
        "content": {UPLOAD: {"schema": {"type": "string", "format": "binary"}}},
    }
    return raw


def plausible_schema(served: dict[str, Any]) -> dict[str, Any]:
    """fuzz_schema, with POST /v1/jobs asking only for python jobs this server takes (argv given, a timeout
    under its limit, no image): most wholly generated specs are refused, so a chain would rarely start."""
    raw = fuzz_schema(served)
    spec = copy.deepcopy(raw["components"]["schemas"]["PythonSpec"])
    props = spec["properties"]
    props["image"] = {"type": "null"}
    props["timeout_s"] = {**props["timeout_s"], "maximum": FUZZ_LIMITS.max_timeout_s}
    props["gpus"] = {**props["gpus"], "maximum": 1}
    props["argv"] = {**props["argv"], "minItems": 1, "maxItems": 4}
    props["env"] = {**props["env"], "maxProperties": 2, "propertyNames": {"pattern": "^[A-Z][A-Z0-9_]{0,15}$"}}
    raw["components"]["schemas"]["PlausiblePythonSpec"] = spec
    body = raw["paths"]["/v1/jobs"]["post"]["requestBody"]["content"]["application/json"]
    body["schema"] = {"$ref": "#/components/schemas/PlausiblePythonSpec"}
    return raw


def upload_body(data: bytes) -> bytes:
    """The bytes sent as a job's input for the generated ``data``: an empty or odd-length one becomes a
    small valid tar (about half: so that jobs run, end and have logs); the others go as they are."""
    if not data or len(data) % 2:
        return make_tar({"m.py": "print('fuzz')\n", "blob": data})
    return data


def _tar_serializer(ctx: Any, value: Any) -> bytes:
    return upload_body(serialize_binary(value))


schemathesis.serializer(UPLOAD)(_tar_serializer)


def load_schemas(base_url: str) -> tuple[Any, Any]:
    """The server's own schema as fuzz_schema and as plausible_schema extend it, sending to ``base_url``."""
    served = httpx.get(f"{base_url}/openapi.json", timeout=30).raise_for_status().json()
    schemas = []
    for extend in (fuzz_schema, plausible_schema):
        config = schemathesis.Config.from_dict({"seed": SEED, "output": {"sanitization": {"enabled": False}}})
        schema = schemathesis.openapi.from_dict(extend(served), config=config)
        schema.config.update(base_url=base_url)
        schemas.append(schema)
    return schemas[0], schemas[1]


@dataclass(frozen=True)
class Seeds:
    job_ids: list[str]
    output_paths: list[str]


def seed_jobs(url: str, timeout: float = 60) -> Seeds:
    """A finished job with a log and an output file, and a job still waiting for its upload."""
    with httpx.Client(base_url=url, timeout=30) as http:
        finished = http.post("/v1/jobs", json={"argv": ["-c", SEED_SCRIPT], "timeout_s": 10})
        finished.raise_for_status()
        done = finished.json()["id"]
        http.put(f"/v1/jobs/{done}/input", content=make_tar({"m.py": "pass\n"})).raise_for_status()
        waiting = http.post("/v1/jobs", json={"argv": ["m.py"], "timeout_s": 10}).raise_for_status().json()["id"]
        deadline = time.monotonic() + timeout
        while http.get(f"/v1/jobs/{done}").json()["state"] != "finished":
            if time.monotonic() > deadline:
                raise AssertionError(f"the seeded job {done} did not finish")
            time.sleep(0.1)
        job = http.get(f"/v1/jobs/{done}").json()
        if job["verdict"] != "ok" or [o["path"] for o in job["outputs"]] != [SEED_OUTPUT]:
            raise AssertionError(f"the seeded job did not run as planned: {job}")
    return Seeds([done, waiting], [SEED_OUTPUT])


# ----- sending, checking, and collecting findings


class ServerLog(Protocol):
    """Where the fuzzer looks for tracebacks the server logged: a position, and what came after it."""

    def mark(self) -> int: ...

    def tracebacks_since(self, mark: int) -> list[str]: ...


class LogRecords(logging.Handler):
    """Every record of the loggers it is attached to, kept (for a server running in this process)."""

    LOGGERS = ("", "uvicorn")  # the root gets kcoral.* (they propagate); uvicorn's loggers do not propagate

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self._records_lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._records_lock:
            self.records.append(record)

    def mark(self) -> int:
        with self._records_lock:
            return len(self.records)

    def tracebacks_since(self, mark: int = 0) -> list[str]:
        """The records after ``mark`` that carry a traceback, formatted with it."""
        with self._records_lock:
            records = self.records[mark:]
        return [
            f"{r.name}: {logging.Formatter().format(r)}"
            for r in records
            if r.exc_info or r.exc_text or r.stack_info or "Traceback" in r.getMessage()
        ]

    def attach(self) -> None:
        for name in self.LOGGERS:
            logging.getLogger(name).addHandler(self)

    def detach(self) -> None:
        for name in self.LOGGERS:
            logging.getLogger(name).removeHandler(self)


@dataclass
class Finding:
    check: str
    request: str
    status: int | None
    body: str
    detail: str

    def __str__(self) -> str:
        answer = f"{self.status} {self.body[:600]}" if self.status is not None else "no answer"
        return f"[{self.check}] {self.request}\n  -> {answer}\n  {self.detail}".rstrip()


@dataclass
class Fuzzer:
    """Sends schemathesis cases, counts them, and keeps every finding (a run goes on past one)."""

    logs: ServerLog | None = None
    requests_made: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    by_operation: Counter[tuple[str, int]] = field(default_factory=Counter)
    seconds: Counter[str] = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)
    bad_error_bodies: int = 0
    #: times the state machine went on with a new seed after hypothesis found a scenario replaying differently
    stateful_restarts: int = 0
    #: where the server log stood after the last answer, and the request of that answer
    log_mark: int = 0
    last_request: str = ""
    session: requests.Session = field(default_factory=requests.Session)
    _seen: set[tuple[str, str]] = field(default_factory=set)

    def _finding(self, check: str, case: Case, status: int | None, body: str, detail: str, what: str = "") -> None:
        """Keep a finding; the same one (``what``, else ``detail``) of the same operation only once."""
        key = (check, f"{case.operation.label} {status} {(what or detail)[:200]}")
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(Finding(check, case.as_curl_command(), status, body, detail))

    def exchange(self, case: Case) -> schemathesis.Response | None:
        """One request and its checks; None when no answer came (a follow still waiting is no finding)."""
        following = case.operation.path.endswith("/log") and _truthy((case.query or {}).get("follow"))
        kwargs: dict[str, Any] = {"session": self.session}
        if following:
            kwargs["timeout"] = FOLLOW_READ_TIMEOUT_S
        self.requests_made += 1
        t0 = time.monotonic()
        try:
            response = case.call(**kwargs)
        except requests.RequestException as exc:  # no answer, or one cut off before its end
            waiting = following and isinstance(exc, (requests.ConnectionError, requests.Timeout))
            if not (waiting and self._unfinished(case)):
                self._finding("no_answer", case, None, "", f"{type(exc).__name__}: {exc}")
            response = None
        self.seconds[case.operation.label] += time.monotonic() - t0
        if response is not None:
            self.statuses[response.status_code] += 1
            self.by_operation[(case.operation.label, response.status_code)] += 1
            self._check(case, response)
        self._check_logs(case, response)
        return response

    def _unfinished(self, case: Case) -> bool:
        """Whether the job whose log a silent follow read is still to finish (so it may stay silent)."""
        job_id = (case.path_parameters or {}).get("job_id")
        try:
            answer = self.session.get(f"{case.operation.schema.get_base_url()}/v1/jobs/{job_id}", timeout=10)
            return answer.status_code == 200 and answer.json()["state"] != "finished"
        except (requests.RequestException, ValueError, KeyError):
            return False

    def _check(self, case: Case, response: schemathesis.Response) -> None:
        body = response.content.decode(errors="replace")
        if response.status_code >= 500:
            self._finding("server_error", case, response.status_code, body, "a 5xx answer")
        if response.status_code >= 400 and case.method.upper() != "HEAD":
            shape = _error_shape(response)
            if shape:
                self.bad_error_bodies += 1
                self._finding("error_body_shape", case, response.status_code, body, shape)
        try:
            case.validate_response(response, checks=CHECKS)
        except FailureGroup as group:
            for failure in group.exceptions:
                self._failure(case, response, body, failure)
        except Failure as failure:
            self._failure(case, response, body, failure)

    def _failure(self, case: Case, response: schemathesis.Response, body: str, failure: Failure) -> None:
        detail = f"{failure.title}: {failure.message}".replace("\n", " ")
        self._finding(type(failure).__name__, case, response.status_code, body, detail)

    def _check_logs(self, case: Case, response: schemathesis.Response | None) -> None:
        """Tracebacks logged since the previous answer, held against this request (a server may log
        an error just after the answer it cut short: the next request is then blamed as well)."""
        if self.logs is None:
            return
        since, self.log_mark = self.log_mark, self.logs.mark()
        previous, self.last_request = self.last_request, case.as_curl_command()
        for text in self.logs.tracebacks_since(since):
            status = response.status_code if response is not None else None
            body = response.content.decode(errors="replace") if response is not None else ""
            where = f"logged after the answer to the previous request ({previous}), by the end of this one's:\n  "
            last_line = text.strip().splitlines()[-1]  # the exception: one finding per kind of traceback
            self._finding("traceback_in_log", case, status, body, where + text, what=last_line)

    def per_operation(self) -> str:
        labels = sorted({label for label, _ in self.by_operation})
        return "\n".join(
            f"  {label:40} {self.seconds[label]:5.1f} s  "
            + " ".join(f"{c}:{n}" for (op, c), n in sorted(self.by_operation.items()) if op == label)
            for label in labels
        )

    def summary(self) -> str:
        codes = ", ".join(f"{code}: {n}" for code, n in sorted(self.statuses.items()))
        return (
            f"{self.requests_made} requests ({codes}); {sum(n for c, n in self.statuses.items() if c >= 500)} "
            f"answers >= 500; {self.bad_error_bodies} error bodies not in our shape; {len(self.findings)} findings"
            + (f"; {self.stateful_restarts} stateful restarts" if self.stateful_restarts else "")
        )


def _truthy(value: object) -> bool:
    return str(value).lower() in ("1", "true", "yes", "on", "t", "y")


def _error_shape(response: schemathesis.Response) -> str:
    """Why an error body is not {"error": code, "message": text} ('' when it is)."""
    try:
        body = response.json()
    except ValueError:
        return f"not JSON (content-type {response.headers.get('content-type')})"
    if not isinstance(body, dict) or set(body) != {"error", "message"}:
        return f"keys {sorted(body) if isinstance(body, dict) else type(body).__name__}, not ['error', 'message']"
    if not all(isinstance(body[k], str) and body[k] for k in ("error", "message")):
        return "error and message must be non-empty strings"
    return ""


# ----- the two phases


def _settings(examples: int, seed: int) -> Callable[[Any], Any]:
    """Hypothesis settings for a bounded, repeatable run: a fixed seed, no example database (nothing is
    written to the working tree), no deadline, no shrinking (a finding is kept, never raised)."""
    settings = hypothesis.settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    return lambda test: settings(hypothesis.seed(seed)(test))


def _strategies(operation: Any, plausible: Any, mode: GenerationMode, seeds: Seeds) -> Any:
    """Cases of ``operation``; in positive mode also plausible specs (``plausible``: the same operation
    in plausible_schema) and cases about the seeded jobs (a generated job id is almost never a job:
    without them, whatever is past the 404 of an unknown job stays untested)."""
    plain = operation.as_strategy(generation_mode=mode)
    if mode != GenerationMode.POSITIVE:
        return plain
    if operation.label == "POST /v1/jobs":
        return st.one_of(plain, plausible.as_strategy(generation_mode=mode))
    names = {p["name"] for p in operation.definition.raw.get("parameters", []) if p["in"] == "path"}
    if "job_id" not in names:
        return plain
    fixed = [{"job_id": job_id} for job_id in seeds.job_ids]
    if "path" in names:
        fixed += [{"job_id": seeds.job_ids[0], "path": path} for path in seeds.output_paths]
    return st.one_of(plain, *(operation.as_strategy(generation_mode=mode, path_parameters=f) for f in fixed))


def _negatable(operation: Any) -> bool:
    """Whether a negative case of ``operation`` exists: a query parameter or a JSON body to make invalid
    (its path parameters and the authorization header are any string: nothing is invalid in them, and
    hypothesis would draw thousands of rejected cases before it gives up)."""
    raw = operation.definition.raw
    query = any(p["in"] == "query" for p in raw.get("parameters", []))
    return query or "application/json" in raw.get("requestBody", {}).get("content", {})


def run_stateless(schema: Any, plausible: Any, fuzzer: Fuzzer, examples: int, seeds: Seeds, seed: int) -> None:
    """Positive cases of every operation, and negative ones of those that have any."""
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)[: 2 if _negatable(operation) else 1]:
            strategy = _strategies(operation, plausible[operation.path][operation.method], mode, seeds)

            @_settings(examples, seed)
            @hypothesis.given(case=strategy)
            def send(case: Case) -> None:
                fuzzer.exchange(case)

            send()


def run_stateful(schema: Any, fuzzer: Fuzzer, scenarios: int, steps: int, seed: int) -> None:
    """schemathesis' state machine over the links; each step is sent and checked by ``fuzzer``.

    Which rules a step may take depends on what the server answered before (a bundle of created jobs
    fills only on a 201), so hypothesis may find a replayed scenario drawing differently and stop with
    Flaky: as schemathesis' own runner does, the remaining scenarios then run on the next seed."""
    base = schema.as_state_machine()
    done = 0

    class Machine(base):  # type: ignore[misc, valid-type]
        def teardown(self) -> None:
            nonlocal done
            done += 1
            super().teardown()

        def call(self, case: Case, **kwargs: Any) -> schemathesis.Response:
            response = fuzzer.exchange(case)
            if response is None:  # a follow still waiting: the same request, without waiting
                case.query = {**(case.query or {}), "follow": "false"}
                response = fuzzer.exchange(case)
            if response is None:
                raise AssertionError(f"no answer to {case.as_curl_command()}")
            return response

        def validate_response(self, response: Any, case: Case, *args: Any, **kwargs: Any) -> None:
            """Checked in call, by the fuzzer, which collects findings instead of stopping."""

    for attempt in range(20):
        settings = hypothesis.settings(
            max_examples=scenarios - done,
            stateful_step_count=steps,
            deadline=None,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        try:
            hypothesis.seed(seed + 1000 * attempt)(Machine).run(settings=settings)
        except Exception as exc:
            if not _replayed_differently(exc):
                raise
            fuzzer.stateful_restarts += 1
            if done >= scenarios:
                return
        else:
            return


def _replayed_differently(exc: BaseException) -> bool:
    """Hypothesis' Flaky, or the assertion its data tree fails with when a replay drew past a value."""
    if isinstance(exc, Flaky):
        return True
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return isinstance(exc, AssertionError) and tb is not None and "hypothesis" in tb.tb_frame.f_globals["__name__"]


def fuzz(
    url: str,
    logs: ServerLog | None,
    examples: int,
    scenarios: int,
    steps: int,
    *,
    requests_wanted: int = 0,
    seed: int = SEED,
    report: Callable[[str], None] = print,
) -> Fuzzer:
    """Seed a few jobs, then both phases against the server at ``url``, in rounds with the hypothesis
    seeds ``seed``, ``seed + 1``, ... until ``requests_wanted`` requests were made (one round at least).
    Between rounds the jobs still waiting for an upload are cancelled, so that the per-token cap of
    waiting jobs (a 429, itself fuzzed) does not stop every later round from creating jobs."""
    seeds = seed_jobs(url)
    schema, plausible = load_schemas(url)
    fuzzer = Fuzzer(logs=logs)
    for round_ in itertools.count():
        round_seed = seed + round_
        t0 = time.monotonic()
        run_stateless(schema, plausible, fuzzer, examples, seeds, round_seed)
        t1 = time.monotonic()
        run_stateful(plausible, fuzzer, scenarios, steps, round_seed)
        report(f"round {round_}: stateless {t1 - t0:.1f} s, stateful {time.monotonic() - t1:.1f} s; {fuzzer.summary()}")
        if fuzzer.requests_made >= requests_wanted:
            return fuzzer
        cancel_waiting(url, keep=seeds.job_ids)
    raise AssertionError("unreachable")


def cancel_waiting(url: str, keep: list[str]) -> int:
    """Cancel the jobs still waiting for their upload (but the seeded one); how many."""
    with httpx.Client(base_url=url, timeout=30) as http:
        jobs = http.get("/v1/jobs", params={"limit": 500}).raise_for_status().json()
        waiting = [j["id"] for j in jobs if j["state"] == "created" and j["id"] not in keep]
        for job_id in waiting:
            http.post(f"/v1/jobs/{job_id}/cancel").raise_for_status()
    return len(waiting)


def drain(url: str, timeout: float) -> list[str]:
    """Wait until no job is queued or running; the ones still are after ``timeout``."""
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=url, timeout=30) as http:
        while True:
            jobs = http.get("/v1/jobs", params={"limit": 500}).raise_for_status().json()
            busy = [j["id"] for j in jobs if j["state"] in ("queued", "running")]
            if not busy or time.monotonic() > deadline:
                return busy
            time.sleep(0.2)


# ----- the test


@pytest.fixture
def hypothesis_home(tmp_path: Path) -> Iterator[None]:
    """Hypothesis' own files (its caches of Unicode data and of constants), under tmp_path instead of
    .hypothesis/ in the working directory."""
    set_hypothesis_home_dir(tmp_path / "hypothesis")
    try:
        yield
    finally:
        set_hypothesis_home_dir(None)


@pytest.fixture
def fuzz_server(
    server_factory: Callable[..., RunningServer], hypothesis_home: None
) -> Iterator[tuple[RunningServer, LogRecords]]:
    srv = server_factory(limits=FUZZ_LIMITS, shutdown_grace_s=1.0)
    logs = LogRecords()
    logs.attach()  # after uvicorn configured its loggers
    try:
        yield srv, logs
    finally:
        logs.detach()


def test_the_api_holds_under_schema_driven_fuzzing(fuzz_server: tuple[RunningServer, LogRecords]) -> None:
    srv, logs = fuzz_server
    t0 = time.monotonic()
    fuzzer = fuzz(srv.url, logs, CI_EXAMPLES, CI_SCENARIOS, CI_STEPS)
    busy = drain(srv.url, timeout=30)  # the fuzzed jobs end (each has at most 10 s), and log what they log
    print(f"fuzzing: {fuzzer.summary()} in {time.monotonic() - t0:.1f} s\n{fuzzer.per_operation()}")
    late = logs.tracebacks_since(fuzzer.log_mark)  # logged after the last answer: a job ending, a container removed
    assert fuzzer.requests_made >= 200, fuzzer.summary()
    assert not busy, f"jobs still queued or running 30 s after the fuzzing: {busy}"
    if fuzzer.findings or late:
        pytest.fail("\n\n".join([*map(str, fuzzer.findings), *(f"[traceback_in_log, late] {t}" for t in late)]))
