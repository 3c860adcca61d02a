"""A container's output from the real engine (runner.enginelog): the attach opened before the start
has every byte of both streams, as the engine's own log has them; the rest of a stream that broke
off is read from that log, per stream."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import docker
import pytest
from docker.types import LogConfig

from kcoral.protocol.framing import STDERR, STDOUT
from kcoral.runner.enginelog import ContainerOutput, EngineStreamError, _logged, missed_output

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent

#: short lines on both streams, a block of each in turn, each stream's last line without a newline
PRINTS = """\
import os
for n in range(0, 20000, 500):
    for fd, mark in ((1, b"o"), (2, b"e")):
        lines = [mark + b"%05d\\n" % i for i in range(n, n + 500)]
        if n % 1000:
            os.write(fd, b"".join(lines))  # a block in one write
        else:
            for line in lines:  # a write per line
                os.write(fd, line)
os.write(1, b"out, no newline")
os.write(2, b"err, no newline")
"""
EXPECTED = {
    STDOUT: b"".join(b"o%05d\n" % i for i in range(20000)) + b"out, no newline",
    STDERR: b"".join(b"e%05d\n" % i for i in range(20000)) + b"err, no newline",
}


@pytest.fixture
def container(docker_client: docker.DockerClient, job_image: str) -> Iterator[Any]:
    made = docker_client.containers.create(
        job_image, ["python3", "-c", PRINTS], log_config=LogConfig(type="local"), labels={"kcoral.test": "enginelog"}
    )
    try:
        yield made
    finally:
        with contextlib.suppress(docker.errors.NotFound):
            made.remove(force=True)


def per_stream(batches: Iterator[list[tuple[int, bytes]]]) -> dict[int, bytes]:
    got = {STDOUT: b"", STDERR: b""}
    for batch in batches:
        for stream, data in batch:
            got[stream] += data
    return got


def test_an_attach_before_the_start_has_every_byte_the_engine_logged(container: Any) -> None:
    output = ContainerOutput(container)
    container.start()
    assert per_stream(output.batches()) == EXPECTED == per_stream(_logged(container))
    assert output.received == {STDOUT: len(EXPECTED[STDOUT]), STDERR: len(EXPECTED[STDERR])}


@pytest.mark.parametrize("cut", [(0, 0), (1, 0), (70_000, 3), (len(EXPECTED[STDOUT]), 119_990)])
def test_the_rest_of_a_broken_stream_comes_from_the_engines_log_per_stream(
    container: Any, cut: tuple[int, int]
) -> None:
    container.start()
    container.wait(timeout=60)
    rest = per_stream(missed_output(container, {STDOUT: cut[0], STDERR: cut[1]}))
    assert rest == {STDOUT: EXPECTED[STDOUT][cut[0] :], STDERR: EXPECTED[STDERR][cut[1] :]}


def test_a_container_that_is_gone_cannot_be_attached(container: Any) -> None:
    container.remove(force=True)
    with pytest.raises(docker.errors.NotFound):
        ContainerOutput(container)
    with pytest.raises(docker.errors.NotFound):
        list(missed_output(container, {}))
    assert issubclass(EngineStreamError, docker.errors.DockerException)
