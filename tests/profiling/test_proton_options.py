"""profiling.proton: the options a client may pass, the Python command, the job's command; the proton job
kind's checks and capabilities (stand-in services, no Docker)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kcoral.profiling import capabilities, jobs, proton
from kcoral.profiling.proton import ProtonOptionError, build_command, normalise_options, python_argv
from kcoral.protocol.errors import BadRequest
from kcoral.protocol.models import ProtonSpec
from kcoral.runner.jobkinds import kind_for
from kcoral.runner.settings import Settings
from tests.profiling.test_jobs import CAPS_OK, services


def test_options_are_normalised_with_their_defaults_first() -> None:
    assert normalise_options([]) == ["--data=trace", "--mode=default"]
    assert normalise_options(["--buffer-size", "4096", "--granularity=warp_2", "--data", "tree"]) == [
        "--data=tree",
        "--mode=default",
        "--granularity=warp_2",
        "--buffer-size=4096",
    ]
    both = "--optimizations=time_shift,sched_stores"
    assert normalise_options([both])[-1] == both


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--name", "/etc/x"], "--name is not allowed: the server chooses"),
        (["--backend=cupti"], "--backend is not allowed"),
        (["--hook", "triton"], "--hook is not allowed"),
        (["--sampling-strategy=none"], "is not allowed through kcoral"),
        (["--granularity", "bogus"], "takes one of cta, warp"),
        (["--optimizations=time_shift,rm"], "takes a list of one of"),
        (["--buffer-size=-1"], "non-negative integer"),
        (["--buffer-size"], "needs a value"),
        (["--data=trace", "--data=tree"], "given twice"),
        (["--", "python"], "'--' among the Proton options"),
        (["tree"], "unexpected word"),
    ],
)
def test_refused_options_say_why_in_one_line(args: list[str], message: str) -> None:
    with pytest.raises(ProtonOptionError, match=message) as err:
        normalise_options(args)
    assert "\n" not in str(err.value)


def test_the_python_command() -> None:
    assert python_argv(["python", "capture.py", "1"]) == ["capture.py", "1"]
    assert python_argv(["python3.11", "-m", "pkg.capture"]) == ["-m", "pkg.capture"]
    assert python_argv(["/usr/bin/python3", "c.py"]) == ["c.py"]
    assert python_argv(["c.py", "x"]) == ["c.py", "x"]
    for bad, message in [
        ([], "no command to profile"),
        (["python"], "no script to profile"),
        (["python", "-c", "1"], "not python -c"),
        (["python", "-m"], "needs a module name"),
        (["python", "-m", "os;rm"], "needs a module name"),
        (["-x"], "starts with an option"),
        (["python", "a\x00"], "NUL byte"),
    ]:
        with pytest.raises(ProtonOptionError, match=message):
            python_argv(bad)


def test_the_job_runs_the_script_under_proton_run() -> None:
    assert build_command(["--granularity=cta"], ["python", "capture.py", "7"], "/venv/bin/python") == [
        "/venv/bin/python",
        "-m",
        "kcoral.profiling.proton_run",
        "--name",
        "/job/out/proton",
        "--data=trace",
        "--mode=default",
        "--granularity=cta",
        "--",
        "capture.py",
        "7",
    ]
    assert proton.output_file(normalise_options(["--data=tree"])) == "proton.hatchet"


@pytest.fixture
def caps(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    state = {k: (dict(v) if isinstance(v, dict) else v) for k, v in CAPS_OK.items()}
    state["proton"] = {"path": "/venv/bin/python", "version": "3.6.0", "ok": True, "reason": ""}
    monkeypatch.setattr(capabilities, "for_server", lambda *a, **k: state)
    return state


def test_the_kind_checks_at_submit(caps: dict[str, Any]) -> None:
    kind = kind_for("proton")
    assert isinstance(kind, jobs.ProtonKind)
    kind.validate(ProtonSpec(argv=["--data=tree"], command=["python", "c.py"]), services())
    with pytest.raises(BadRequest, match="--name is not allowed"):
        kind.validate(ProtonSpec(argv=["--name=/job/input/x"], command=["python", "c.py"]), services())
    with pytest.raises(BadRequest, match="need a GPU"):
        kind.validate(ProtonSpec(command=["python", "c.py"], gpus=0), services())
    caps["proton"].update(ok=False, reason="no Proton (triton.profiler): No module named 'triton'")
    with pytest.raises(BadRequest, match="^this server cannot run proton jobs: no Proton .*'triton'$"):
        kind.validate(ProtonSpec(command=["python", "c.py"]), services())


def test_the_job_image_and_python(tmp_path: Path) -> None:
    spec = ProtonSpec(argv=[], command=["python", "c.py"])
    assert jobs.ProtonKind().command(Settings(python="python3"), spec)[:3] == [
        "python3",
        "-m",
        "kcoral.profiling.proton_run",
    ]
    assert capabilities.profiler_image(Settings(image="job:gpu", ncu_image="n:1"), "proton") == "job:gpu"
    image_mode = capabilities.for_server(Settings(image="job:gpu"), lambda ref: ref == "job:gpu")["proton"]
    assert image_mode["ok"] and image_mode["image"] == "job:gpu" and "triton.profiler" in image_mode["note"]
    absent = capabilities.for_server(Settings(image="job:gpu"), lambda ref: False)["proton"]
    assert not absent["ok"] and "the job image job:gpu is not built on this server" in absent["reason"]


def _python(tmp_path: Path, said: str) -> str:
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\necho '{said}'\n")
    fake.chmod(0o755)
    return str(fake)


def test_proton_facts_ask_the_jobs_python(tmp_path: Path) -> None:
    ok = json.dumps({"version": "3.6.0", "ok": True, "reason": ""})
    assert capabilities.proton_facts(_python(tmp_path, ok)) == {
        "path": str(tmp_path / "python"),
        "version": "3.6.0",
        "ok": True,
        "reason": "",
    }
    garbled = capabilities.proton_facts(_python(tmp_path, "not json"))
    assert not garbled["ok"] and "did not say" in garbled["reason"]
    missing = capabilities.proton_facts("no-such-python-here", path=str(tmp_path / "empty"))
    assert not missing["ok"] and "is not on this server" in missing["reason"]
