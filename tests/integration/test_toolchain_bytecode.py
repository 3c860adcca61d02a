"""Toolchain mode (``kcoral serve --host-toolchain``): jobs import the host Python's modules from the
bytecode the server compiled (runner.pycache), which they can read and never write."""

from __future__ import annotations

import json
import time

import docker
import docker.errors
import pytest

from kcoral.images.refs import IMAGE_REFS
from kcoral.runner.settings import DEFAULT_TOOLCHAIN_MOUNTS, PYCACHE_COMPLETE, PYCACHE_MOUNT

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent

HOST_PYTHON = "/usr/bin/python3"
SCRIPT = r"""
import importlib.util, json, os, sys
import email.mime.text as module  # a standard library module no job had imported before
try:
    open(os.path.join(sys.pycache_prefix or "/nowhere", "planted.pyc"), "wb")
    writable = True
except OSError:
    writable = False
cached = module.__spec__.cached
seen = {"prefix": sys.pycache_prefix, "cached": cached, "present": os.path.isfile(cached), "writable": writable}
print(json.dumps(seen))
"""


@pytest.fixture
def toolchain_image(docker_client: docker.DockerClient) -> str:
    ref = IMAGE_REFS["toolchain"]
    try:
        docker_client.images.get(ref)
    except docker.errors.ImageNotFound:
        from kcoral.images.build import build_images

        build_images(docker_client, ["toolchain"])
    return ref


def test_a_toolchain_job_reads_the_servers_bytecode_and_cannot_write_it(server_factory, toolchain_image) -> None:
    srv = server_factory(image=toolchain_image, toolchain_mounts=DEFAULT_TOOLCHAIN_MOUNTS, python=HOST_PYTHON)
    pycache = srv.settings.pycache_dir
    assert pycache is not None
    deadline = time.monotonic() + 300
    while not (pycache / PYCACHE_COMPLETE).is_file():
        assert time.monotonic() < deadline, "the server did not compile the toolchain's bytecode"
        time.sleep(0.2)
    job, log = srv.run({"m.py": SCRIPT}, ["m.py"])
    assert job["verdict"] == "ok", log
    seen = json.loads(log.strip().splitlines()[-1])
    assert seen["prefix"] == PYCACHE_MOUNT and seen["cached"].startswith(PYCACHE_MOUNT + "/")
    assert seen["present"] and not seen["writable"]
    assert "compiled the job interpreter's import path" in (pycache / PYCACHE_COMPLETE).read_text()
    assert srv.http.get("/v1/health").json()["toolchain_bytecode"].startswith("compiled the job interpreter's")
