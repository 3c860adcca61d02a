"""The profiler images (images/profilers.py) built on the real engine, on the CPU job image.

The IKET layer is the real one (nvidia-cutlass-dsl wheels from PyPI): a CuTe DSL kernel with IKET
ranges and markers compiles in it as uid 65534 (no GPU is needed to compile). The ncu layer is built
from a stand-in installation folder (a script named ncu and an ncu_report.py): what is tested is
the layering, the wrapper on PATH and the label, not Nsight Compute. A server in image mode then
reports both images in /health.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import docker.errors
import pytest

from kcoral.images.profilers import ProfilerBuild, build_iket_image, build_ncu_image
from kcoral.images.refs import IMAGE_LABEL, IMAGE_REFS
from tests.conftest import RunningServer

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent

CAPTURE = Path(__file__).resolve().parents[2] / "examples" / "iket_capture"
STAND_IN_NCU = "#!/bin/sh\necho 'NVIDIA (R) Nsight Compute Command Line Profiler'\necho 'Version 0.0.0-stand-in'\n"


def run_as_job(client: docker.DockerClient, ref: str, command: list[str], **extra: object) -> str:
    out = client.containers.run(
        ref,
        command,
        user="65534:65534",
        read_only=True,
        tmpfs={"/tmp": "rw,exec"},
        network_disabled=True,
        remove=True,
        **extra,
    )
    return out.decode()


@pytest.fixture(scope="module")
def iket_image(docker_client: docker.DockerClient, job_image: str) -> str:
    build_iket_image(docker_client, log=lambda msg: None, opts=ProfilerBuild(base=job_image))
    return IMAGE_REFS["iket"]


@pytest.fixture
def stand_in_ncu_image(docker_client: docker.DockerClient, job_image: str, tmp_path: Path) -> Iterator[str]:
    ref = IMAGE_REFS["ncu"]
    try:
        real = docker_client.images.get(ref)
        if real.labels.get("kcoral.test") != "stand-in":
            pytest.skip(f"{ref} exists here and is not the stand-in: not replacing it")
    except docker.errors.ImageNotFound:
        pass
    tree = tmp_path / "nsight-compute"
    (tree / "extras" / "python").mkdir(parents=True)
    (tree / "ncu").write_text(STAND_IN_NCU)
    (tree / "ncu").chmod(0o755)
    (tree / "extras" / "python" / "ncu_report.py").write_text("# stand-in\n")
    build_ncu_image(docker_client, force=True, log=lambda msg: None, opts=ProfilerBuild(base=job_image, ncu_dir=tree))
    yield ref
    docker_client.images.remove(ref, force=True)


def test_iket_image_compiles_a_cute_dsl_kernel_with_iket_ranges(
    docker_client: docker.DockerClient, iket_image: str, job_image: str
) -> None:
    image = docker_client.images.get(iket_image)
    assert image.labels[IMAGE_LABEL] == "iket"
    assert "CUTE_DSL_NO_CACHE=1" in image.attrs["Config"]["Env"]
    assert image.attrs["Config"]["User"] == "65534:65534"
    out = run_as_job(
        docker_client,
        iket_image,
        ["python3", "capture.py", "--compile-only"],
        environment={"HOME": "/tmp/home", "CUTE_DSL_ARCH": "sm_90a"},
        volumes={str(CAPTURE): {"bind": "/job/input", "mode": "ro"}},
        working_dir="/job/input",
    )
    assert out.strip().endswith("compiled")
    assert "usage: run-iket" in run_as_job(docker_client, iket_image, ["run-iket", "--help"])
    # the wheels stayed in the install stage
    # one layer over the base holds the installed packages; the wheels stayed in the install stage
    added = docker_client.api.history(iket_image)[: -len(docker_client.api.history(job_image))]
    copies = [layer for layer in added if "COPY" in (layer.get("CreatedBy") or "")]
    assert len(copies) == 1 and sum(layer["Size"] for layer in added if layer not in copies) < 2**20


def test_ncu_image_puts_the_copied_installation_on_path(
    docker_client: docker.DockerClient, stand_in_ncu_image: str
) -> None:
    assert docker_client.images.get(stand_in_ncu_image).labels[IMAGE_LABEL] == "ncu"
    assert "Version 0.0.0-stand-in" in run_as_job(docker_client, stand_in_ncu_image, ["ncu", "--version"])
    listing = run_as_job(docker_client, stand_in_ncu_image, ["ls", "/opt/nvidia/nsight-compute/extras/python"])
    assert listing.split() == ["ncu_report.py"]


def test_image_mode_server_reports_the_profiler_images(
    server_factory: Callable[..., RunningServer], iket_image: str, stand_in_ncu_image: str
) -> None:
    srv = server_factory(ncu_image=stand_in_ncu_image, iket_image=iket_image)
    prof = srv.http.get("/v1/health").json()["profiling"]
    assert prof["source"] == "images"
    assert prof["iket"] == {"image": iket_image, "path": "run-iket", "ok": True, "reason": ""}
    assert prof["ncu"]["image"] == stand_in_ncu_image and prof["ncu"]["path"] == "ncu"
    missing = server_factory(iket_image="kcoral-iket:not-built").http.get("/v1/health").json()["profiling"]
    assert missing["iket"]["ok"] is False and "kcoral images build iket" in missing["iket"]["reason"]
    # a CPU-only server refuses profiling jobs at once, saying why
    r = srv.http.post("/v1/jobs", json={"kind": "iket", "argv": ["profile"], "command": ["python", "c.py"]})
    assert r.status_code == 400 and "GPU" in r.json()["message"], r.text


def test_the_build_list_matches_the_builders() -> None:
    from kcoral.images.build import BUILDERS, PROFILER_BUILDERS
    from kcoral.images.refs import BUILDABLE

    assert [*BUILDERS, *PROFILER_BUILDERS] == list(BUILDABLE)
