from __future__ import annotations

from pathlib import Path

from kcoral.profiling import capabilities


def test_counters_restricted(tmp_path: Path) -> None:
    params = tmp_path / "params"
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\nEnableMSI: 1\n")
    assert capabilities.counters_restricted(str(params)) is True
    params.write_text("RmProfilingAdminOnly: 0\n")
    assert capabilities.counters_restricted(str(params)) is False
    params.write_text("EnableMSI: 1\n")
    assert capabilities.counters_restricted(str(params)) is None
    assert capabilities.counters_restricted(str(tmp_path / "missing")) is None


def test_probe_reports_restricted_counters(tmp_path: Path) -> None:
    ncu = tmp_path / "ncu"
    ncu.write_text("#!/bin/sh\necho 'NVIDIA (R) Nsight Compute Command Line Profiler'\necho 'Version 2025.3.1.0 (x)'\n")
    ncu.chmod(0o755)
    params = tmp_path / "params"
    params.write_text("RmProfilingAdminOnly: 1\n")
    caps = capabilities.probe(ncu=str(ncu), params_file=str(params))
    assert caps["counters_restricted"] is True
    assert caps["ncu"]["path"] == str(ncu) and caps["ncu"]["version"].startswith("2025.3.1.0")
    assert caps["ncu"]["ok"] is False and "RmProfilingAdminOnly=1" in caps["ncu"]["reason"]
    params.write_text("RmProfilingAdminOnly: 0\n")
    assert capabilities.probe(ncu=str(ncu), params_file=str(params))["ncu"]["ok"] is True


def test_run_iket_next_to_the_job_python(tmp_path: Path) -> None:
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python3").write_text("")
    (venv / "run-iket").write_text("#!/bin/sh\n")
    (venv / "run-iket").chmod(0o755)
    assert capabilities.find_run_iket(str(venv / "python3"), path=str(tmp_path / "nothing")) == str(venv / "run-iket")
    assert capabilities.find_run_iket("python3", path=str(tmp_path / "nothing")) is None
    caps = capabilities.probe(str(venv / "python3"), params_file=str(tmp_path / "none"))
    assert caps["iket"]["ok"] is True and caps["iket"]["path"] == str(venv / "run-iket")


def test_probe_is_cached_and_json_friendly() -> None:
    import json

    first = capabilities.probe()
    assert capabilities.probe() is first
    json.dumps(first)
    assert set(first) == {"source", "counters_restricted", "ncu", "iket", "sanitizer", "timeline", "proton"}
    assert first["source"] == "host"


def test_image_mode_asks_for_the_profiler_images(tmp_path: Path) -> None:
    from kcoral.runner.settings import Settings

    params = tmp_path / "params"
    params.write_text("RmProfilingAdminOnly: 0\n")
    asked: list[str] = []

    def has_image(ref: str) -> bool:
        asked.append(ref)
        return ref == "kcoral-iket:latest"

    caps = capabilities.for_server(Settings(), has_image, params_file=str(params))
    assert asked == ["kcoral-ncu:latest", "kcoral-iket:latest", "kcoral-job:cpu"] and caps["source"] == "images"
    assert caps["iket"] == {"image": "kcoral-iket:latest", "path": "run-iket", "ok": True, "reason": ""}
    assert caps["ncu"]["ok"] is False and "kcoral images build ncu" in caps["ncu"]["reason"]
    params.write_text("RmProfilingAdminOnly: 1\n")
    caps = capabilities.for_server(Settings(ncu_image="mine:1"), lambda ref: True, params_file=str(params))
    assert caps["ncu"]["image"] == "mine:1" and caps["ncu"]["ok"] is False
    assert "RmProfilingAdminOnly=1" in caps["ncu"]["reason"] and caps["iket"]["ok"] is True
    # toolchain mode: the host, whatever the images
    host = capabilities.for_server(Settings(toolchain_mounts=("/usr",)), has_image, params_file=str(params))
    assert host["source"] == "host"


def test_compute_sanitizer_on_the_path_or_in_the_toolkit(tmp_path: Path) -> None:
    tool = tmp_path / "bin" / "compute-sanitizer"
    tool.parent.mkdir()
    tool.write_text(
        "#!/bin/sh\necho 'NVIDIA (R) Compute Sanitizer'\necho 'Copyright (c) 2020-2025 NVIDIA Corporation'\n"
        "echo 'Version 2025.3.1.0 (build 36400806) (public-release)'\n"
    )
    tool.chmod(0o755)
    assert capabilities.find_sanitizer(str(tool.parent), fallback=str(tmp_path / "none")) == str(tool)
    assert capabilities.find_sanitizer(str(tmp_path / "empty"), fallback=str(tool)) == str(tool)
    assert capabilities.find_sanitizer(str(tmp_path / "empty"), fallback=str(tmp_path / "none")) is None
    assert (capabilities.tool_version(str(tool)) or "").startswith("2025.3.1.0")


def test_image_mode_runs_the_sanitizer_in_the_ncu_image(tmp_path: Path) -> None:
    from kcoral.runner.settings import Settings

    params = tmp_path / "params"
    params.write_text("RmProfilingAdminOnly: 1\n")
    caps = capabilities.for_server(Settings(), lambda ref: ref == "kcoral-ncu:latest", params_file=str(params))
    assert caps["sanitizer"]["image"] == "kcoral-ncu:latest" and caps["sanitizer"]["path"] == "compute-sanitizer"
    assert caps["sanitizer"]["ok"] is True and "not checked" in caps["sanitizer"]["note"]
    caps = capabilities.for_server(Settings(), lambda ref: False, params_file=str(params))
    assert "kcoral images build ncu" in caps["sanitizer"]["reason"] and not caps["sanitizer"]["ok"]


def fake_python(tmp_path: Path, output: str, code: int = 0) -> str:
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\necho '{output}'\nexit {code}\n")
    python.chmod(0o755)
    return str(python)


def test_the_timeline_needs_torch_with_cuda_and_kineto(tmp_path: Path) -> None:
    ok = capabilities.timeline_info(fake_python(tmp_path, '{"torch": "2.11.0+cu130", "cuda": "13.0", "kineto": true}'))
    assert ok["path"] == str(tmp_path / "python") and ok["ok"] is True and ok["reason"] == ""
    assert ok["version"] == "torch 2.11.0+cu130, CUDA 13.0"
    cpu = capabilities.timeline_info(fake_python(tmp_path, '{"torch": "2.11.0+cpu", "cuda": null, "kineto": true}'))
    assert not cpu["ok"] and "CPU-only build" in cpu["reason"] and cpu["version"] == "torch 2.11.0+cpu"
    none = capabilities.timeline_info(fake_python(tmp_path, "ModuleNotFoundError", code=1))
    assert not none["ok"] and "cannot import torch" in none["reason"]
    assert "cannot import torch" in capabilities.timeline_info(str(tmp_path / "missing"))["reason"]


def test_image_mode_runs_the_timeline_in_the_job_image(tmp_path: Path) -> None:
    from kcoral.runner.settings import Settings

    params = tmp_path / "params"
    params.write_text("RmProfilingAdminOnly: 1\n")
    settings = Settings(image="kcoral-job:gpu", python="/opt/venv/bin/python")
    caps = capabilities.for_server(settings, lambda ref: ref == "kcoral-job:gpu", params_file=str(params))
    assert caps["timeline"]["image"] == "kcoral-job:gpu" and caps["timeline"]["path"] == "/opt/venv/bin/python"
    assert caps["timeline"]["ok"] is True and "torch (a CUDA build)" in caps["timeline"]["note"]
    caps = capabilities.for_server(settings, lambda ref: False, params_file=str(params))
    assert "the job image kcoral-job:gpu is not built" in caps["timeline"]["reason"] and not caps["timeline"]["ok"]
