"""Shared fixtures: the real Docker engine, the CPU job image, and kcoral servers on loopback.

Tests run against a real engine and a real server (uvicorn in a thread, real HTTP, a real
SQLite file in a temporary data dir). Containers a test leaves are removed by label.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import subprocess
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest
import uvicorn

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")


def _check_the_install_is_this_checkout() -> None:
    """kcoral.runner & co. come from the folders of the checkout that the editable install was made from
    (pyproject's package-dir), while kcoral/ itself comes from this one: another checkout's install would
    have these tests run its code."""
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.find_spec("kcoral.runner")
    where = Path(spec.origin).parent if spec is not None and spec.origin else None
    if where is None or not where.samefile(root / "runner"):
        raise pytest.UsageError(
            f"kcoral.runner is {where or 'not found'}, not {root / 'runner'}: install this checkout "
            f"(python3 -m pip install -e {root}, as scripts/install.sh does)"
        )


_check_the_install_is_this_checkout()

from kcoral.protocol.framing import STATUS, FrameReader  # noqa: E402
from kcoral.runner.app import create_app, server_config  # noqa: E402
from kcoral.runner.limits import Limits  # noqa: E402
from kcoral.runner.sandbox import LABEL_INSTANCE, LABEL_JOB  # noqa: E402
from kcoral.runner.services import Services  # noqa: E402
from kcoral.runner.settings import Settings  # noqa: E402
from kcoral.runner.standby import LABEL_SLOT, LABEL_STANDBY  # noqa: E402
from kcoral.tasks.calibration import CalibrationPolicy  # noqa: E402
from kcoral.tasks.registry import DEFAULT_TASKS_DIR  # noqa: E402
from tests.serverproc import free_port  # noqa: E402

JOB_IMAGE = os.environ.get("KCORAL_TEST_IMAGE", "kcoral-job:cpu")

if os.environ.get("PYTEST_XDIST_WORKER"):
    # a pytest-xdist worker (scripts/test.sh's concurrent lane) starts with COLUMNS=80 and LINES=24 set,
    # which a run without it does not have: the client's tables would be cut to 80 columns there only
    # (kcoral.cli.output.stdout: not a terminal, 200 unless COLUMNS says otherwise)
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)

#: what a test that needs the Docker engine asks for, directly or through another fixture
ENGINE_FIXTURES = frozenset({"docker_client", "job_image"})


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects: the engine-free files' mark counts
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files whose tests need no engine first (seconds in all: a mistake there shows at once), then
    the rest in their usual order. A file moves as a whole, its tests in their order, so that a
    module-scoped fixture (a server, a cluster) is still set up once. A file with no engine is
    ``concurrent`` (pyproject's markers: scripts/test.sh runs those two at a time), unless marked ``alone``."""
    by_file: dict[Any, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.path, []).append(item)
    needs_engine = {
        path for path, group in by_file.items() if any(ENGINE_FIXTURES & set(i.fixturenames) for i in group)
    }
    items[:] = [i for i in items if i.path not in needs_engine] + [i for i in items if i.path in needs_engine]
    for item in items:
        if item.path not in needs_engine and item.get_closest_marker("alone") is None:
            item.add_marker(pytest.mark.concurrent)


@pytest.fixture(scope="session")
def docker_client() -> docker.DockerClient:
    client = docker.from_env()
    client.ping()
    return client


@pytest.fixture(scope="session")
def job_image(docker_client: docker.DockerClient) -> str:
    try:
        docker_client.images.get(JOB_IMAGE)
    except docker.errors.ImageNotFound:
        from kcoral.images.build import build_images

        build_images(docker_client, ["cpu"])
    return JOB_IMAGE


def make_tar(files: dict[str, str | bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, content in sorted(files.items()):
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@dataclass
class RunningServer:
    settings: Settings
    services: Services
    url: str
    http: httpx.Client
    _server: uvicorn.Server = field(repr=False)
    _thread: threading.Thread = field(repr=False)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self.http.close()

    def submit(self, files: dict[str, str | bytes], argv: list[str], **spec: Any) -> dict[str, Any]:
        """Create a job and upload its files; return the JobView JSON after the upload."""
        r = self.http.post("/v1/jobs", json={"argv": argv, **spec})
        assert r.status_code == 201, r.text
        job_id = r.json()["id"]
        r = self.http.put(f"/v1/jobs/{job_id}/input", content=make_tar(files))
        assert r.status_code == 200, r.text
        return r.json()

    def wait(self, job_id: str, timeout: float = 120) -> dict[str, Any]:
        """The job's view once it has finished: its log followed from where it is with status frames, the
        last of which is that view. The server says when (no poll ten times a second in this process,
        the server's, beside an evaluation timed on the same two cores)."""
        deadline = time.monotonic() + timeout
        job = self.http.get(f"/v1/jobs/{job_id}").json()
        if job["state"] == "finished":
            return job
        params = {"follow": "true", "frames": "true", "status": "true", "offset": str(job["log_bytes"])}
        reader, last = FrameReader(), job
        with suppress(httpx.TimeoutException):
            left = max(deadline - time.monotonic(), 0.1)
            with self.http.stream("GET", f"/v1/jobs/{job_id}/log", params=params, timeout=left) as response:
                for chunk in response.iter_bytes():
                    last = next((json.loads(p.data) for p in reversed(reader.feed(chunk)) if p.stream == STATUS), last)
                    if last["state"] == "finished" or time.monotonic() > deadline:
                        break
        if last["state"] == "finished":
            return last
        raise AssertionError(f"job {job_id} did not finish in {timeout} s: {last}")

    def log(self, job_id: str) -> str:
        return self.http.get(f"/v1/jobs/{job_id}/log").content.decode(errors="replace")

    def run(
        self, files: dict[str, str | bytes], argv: list[str], timeout: float = 120, **spec: Any
    ) -> tuple[dict[str, Any], str]:
        job = self.wait(self.submit(files, argv, **spec)["id"], timeout)
        return job, self.log(job["id"])


def start_server(settings: Settings) -> RunningServer:
    services = Services.build(settings)
    app = create_app(settings, services)
    server = uvicorn.Server(server_config(app, settings.host, settings.port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://{settings.host}:{settings.port}"
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("test server did not start")
        time.sleep(0.02)
    return RunningServer(settings, services, url, httpx.Client(base_url=url, timeout=60), server, thread)


def server_settings(data_dir: Path, image: str, limits: Limits | None = None, **overrides: Any) -> Settings:
    """A test server's settings: loopback on a free port, no GPU, two CPU slots, no A/A request of its own
    (runner.recalibration: a test's ``limits`` with another ``every_s`` than the default's asks for them),
    then ``overrides``."""
    settings = Settings(data_dir=data_dir, port=free_port(), image=image, gpus="none", cpu_slots=2)
    limits = limits or Limits()
    if limits.calibration.every_s == CalibrationPolicy().every_s:
        limits = replace(limits, calibration=replace(limits.calibration, every_s=0.0))
    return replace(settings, limits=limits, **overrides)


#: demo/softmax timed briefly: ten timed iterations in a second at most (15 s more at most on a busy host,
#: where a full evaluation's sampling may go on for two minutes) after a short warm-up, and one holdout
#: probe. For a test whose assertions are about what happens with an evaluation (its history, labels,
#: receipts, how a client shows it), not about how precise its score is: the task's own timing is
#: exercised by the tests of the timing itself (tests/attacks, the co-tenant and loaded-host tests, the
#: task contract's template)
QUICK_TIMING: dict[str, Any] = {
    "warmup_s": 0.1,
    "min_reps": 10,
    "max_reps": 10,
    "budget_s": 1.0,
    "noisy_budget_s": 15.0,
}


def quick_tasks(where: Path, holdout: int = 1, **timing: Any) -> Path:
    """A tasks directory at ``where``: a copy of the repository's demo family whose demo/softmax is timed
    as :data:`QUICK_TIMING` says (then ``timing``) with ``holdout`` probes; for a server's ``tasks_dir``."""
    shutil.copytree(DEFAULT_TASKS_DIR / "demo", where / "demo")
    path = where / "demo" / "softmax" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["timing"].update(QUICK_TIMING, **timing)
    manifest["holdout"]["count"] = holdout
    path.write_text(json.dumps(manifest))
    return where


@contextmanager
def serving(docker_client: docker.DockerClient, settings: Settings) -> Iterator[RunningServer]:
    """A server for the block (a module-scoped fixture's, say); stopped after, its containers removed."""
    srv = start_server(settings)
    try:
        yield srv
    finally:
        srv.stop()
        remove_containers(docker_client, srv.settings.instance)


@pytest.fixture
def server_factory(
    tmp_path: Path, request: pytest.FixtureRequest, docker_client: docker.DockerClient
) -> Iterator[Callable[..., RunningServer]]:
    """Start servers with Settings overrides; stop them and remove their containers afterwards."""
    started: list[RunningServer] = []

    def factory(limits: Limits | None = None, **overrides: Any) -> RunningServer:
        image = overrides.pop("image", None) or request.getfixturevalue("job_image")
        data_dir = overrides.pop("data_dir", None) or tmp_path / f"data{len(started)}"
        srv = start_server(server_settings(data_dir, image, limits, **overrides))
        started.append(srv)
        return srv

    yield factory
    stop_in_background(started)


#: servers being stopped (a test's servers stop while the next test runs: their shutdown, ~0.3 s each,
#: removes their standby containers), and what went wrong stopping them; the session waits for them
_stopping: list[threading.Thread] = []
_stop_errors: list[BaseException] = []


def stop_in_background(servers: list[RunningServer]) -> None:
    """Stop ``servers`` and remove their containers (each server's own, by its instance label: no other
    test's), in a thread of their own through an engine client of its own."""

    if not servers:
        return
    # made here, in the test's thread: reading the environment in the stopping thread raced pytest's own
    # writes to it (PYTEST_CURRENT_TEST: a KeyError from os.environ's iteration, CI 2026-12-05), and
    # requests reads it for proxies on every call unless told not to
    engine = docker.from_env()
    engine.api.trust_env = False

    def stop() -> None:
        try:
            for srv in servers:
                srv.stop()
                remove_containers(engine, srv.settings.instance)
        except BaseException as exc:  # noqa: BLE001 - raised at the session's end
            _stop_errors.append(exc)
        finally:
            engine.close()

    thread = threading.Thread(target=stop, name="kcoral-test-server-stop", daemon=True)
    thread.start()
    _stopping.append(thread)


def wait_for_stopped_servers(timeout: float = 120) -> None:
    """Every server handed to :func:`stop_in_background` is stopped and its containers are gone (for a
    fixture whose teardown needs that: one that removes an image the servers' containers ran in); a
    failure to stop one is raised here."""
    deadline = time.monotonic() + timeout
    for thread in _stopping:
        thread.join(max(0.0, deadline - time.monotonic()))
    assert not [t for t in _stopping if t.is_alive()], f"a test server did not stop in {timeout:g} s"
    _stopping.clear()
    if _stop_errors:
        raise _stop_errors.pop(0)


@pytest.fixture(scope="session", autouse=True)
def _servers_stopped() -> Iterator[None]:
    """At the session's end every server a test started is stopped, its containers gone."""
    yield
    wait_for_stopped_servers()


@contextmanager
def mounted_tmpfs(where: Path, size_mib: int) -> Iterator[Path]:
    """A tmpfs of ``size_mib`` mounted at ``where`` (a new folder) while the block runs: a filesystem
    of its own for a data dir (root only: CI runs as root; the test is skipped otherwise)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def remove_containers(client: docker.DockerClient, instance: str) -> None:
    """Remove what a test server left, by label (a removal the server itself began may still run)."""
    for c in client.containers.list(all=True, filters={"label": f"{LABEL_INSTANCE}={instance}"}):
        try:
            c.remove(force=True)
        except docker.errors.APIError as exc:
            if exc.status_code not in (404, 409):
                raise


@pytest.fixture
def server(server_factory: Callable[..., RunningServer]) -> RunningServer:
    return server_factory()


@pytest.fixture
def remote(server: RunningServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> RunningServer:
    """``server`` (a module may override it with a shared one) as the CLI's remote, for commands run in
    process through ``cli.main.run``: $KCORAL_REMOTE, no token, 200 columns, working in ``tmp_path``."""
    monkeypatch.setenv("KCORAL_REMOTE", server.url)
    monkeypatch.delenv("KCORAL_TOKEN", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)
    return server


def standbys(engine: docker.DockerClient, instance: str) -> list:
    """The standby containers (runner.standby) of a server instance, running."""
    return engine.containers.list(filters={"label": [f"{LABEL_INSTANCE}={instance}", LABEL_STANDBY]})


def wait_for_standby(engine: docker.DockerClient, instance: str, slot: str = "cpu0", timeout: float = 20) -> str:
    """The waiting standby of ``slot`` (a job on an idle server takes the first free slot: cpu0)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [
            c
            for c in standbys(engine, instance)
            if not c.name.startswith("kcoral-") and c.labels.get(LABEL_SLOT) == slot
        ]
        if found:
            return found[0].id
        time.sleep(0.05)
    raise AssertionError("no standby container was started")


def wait_for_ready_standby(
    server: RunningServer, engine: docker.DockerClient, slot: str = "cpu0", timeout: float = 20
) -> str:
    """:func:`wait_for_standby`, and then until ``server`` holds it ready: the engine lists it running
    before its start has returned to the server, and a job that comes meanwhile waits only
    ``runner.standby.MAKING_WAIT_S`` for it (then starts a container of its own: a busy host's case)."""
    found = wait_for_standby(engine, server.settings.instance, slot, timeout)
    pool = server.services.executor.standbys
    assert pool is not None, "a server without standbys"
    deadline = time.monotonic() + timeout
    while found not in pool.in_use()[0]:
        assert time.monotonic() < deadline, "the standby container was started and never ready"
        time.sleep(0.05)
    return found


def job_containers(engine: docker.DockerClient, job_id: str) -> list:
    """A job's containers as the engine lists them (sparse: no inspect of each, which would race with
    the server removing one): those labelled with the job, and the standby renamed for it."""
    labelled = engine.containers.list(all=True, sparse=True, filters={"label": f"{LABEL_JOB}={job_id}"})
    named = engine.containers.list(all=True, sparse=True, filters={"name": f"kcoral-{job_id}"})
    return list({c.id: c for c in [*labelled, *named]}.values())
