"""The attack files' servers, one of each per file (module scope)."""

from __future__ import annotations

from collections.abc import Iterator

import docker
import pytest

from tests.conftest import RunningServer, quick_tasks, server_settings, serving


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, docker_client: docker.DockerClient, job_image: str
) -> Iterator[RunningServer]:
    """One server for the file's evaluations, with tests.conftest's settings (each evaluation is a job
    of its own, its containers removed before its result: a server per test only added its start, its
    standby containers' and its stop, ~0.5 s each time)."""
    with serving(docker_client, server_settings(tmp_path_factory.mktemp("attacks"), job_image)) as srv:
        yield srv


@pytest.fixture(scope="module")
def quick_server(
    tmp_path_factory: pytest.TempPathFactory, docker_client: docker.DockerClient, job_image: str
) -> Iterator[RunningServer]:
    """A server whose demo/softmax is timed briefly (tests.conftest.quick_tasks), for the evaluations
    whose assertions are about what the attack found or printed, not about the timing's precision."""
    tasks = quick_tasks(tmp_path_factory.mktemp("quicktasks"))
    settings = server_settings(tmp_path_factory.mktemp("attacks-quick"), job_image, tasks_dirs=(tasks,))
    with serving(docker_client, settings) as srv:
        yield srv
