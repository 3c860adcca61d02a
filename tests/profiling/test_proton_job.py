"""``kcoral proton`` end to end against the test server on the CPU job image (no GPU, no triton there): the
real in-container runner (profiling.proton_run) refuses in one line when the image has no Proton, and with a
stand-in triton package in the sent folder runs the script under it and the trace's summary comes back."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kcoral.cli.commands.proton_cmd import split_proton_args
from kcoral.cli.main import run
from kcoral.profiling import jobs
from kcoral.protocol.errors import UsageError
from tests.conftest import RunningServer

#: no timing asserted, nothing done to the engine that another file would see (scripts/test.sh)
pytestmark = pytest.mark.concurrent

TRACE = Path(__file__).resolve().parents[1] / "fixtures" / "proton" / "h200-spin.chrome_trace"

#: triton.profiler as far as proton_run uses it: finalize() writes the H200's real trace as this run's
STAND_IN = {
    "triton/__init__.py": '__version__ = "0.0-stand-in"\n',
    "triton/profiler/__init__.py": (
        "import shutil, types\n"
        "class Default:\n"
        "    def __init__(self, **fields):\n"
        "        self.fields = fields\n"
        "    def __str__(self):\n"
        "        return 'default:' + ','.join(f'{k}={v}' for k, v in sorted(self.fields.items()))\n"
        "mode = types.SimpleNamespace(Default=Default, MMA=Default)\n"
        "_name = None\n"
        "def start(name, data, backend, mode):\n"
        "    global _name\n"
        "    assert backend == 'instrumentation' and data == 'trace', (backend, data)\n"
        "    _name = name\n"
        "def finalize():\n"
        "    shutil.copy('spin.chrome_trace', _name + '.chrome_trace')\n"
    ),
    "triton/profiler/language.py": "def enter_scope(name): pass\ndef enable_semantic(name): pass\n",
    "capture.py": "import sys\nprint('capture ran with', sys.argv[1:])\n",
}


def test_split_proton_args() -> None:
    parsed = split_proton_args(["--granularity", "cta", "-e", "A=1", "--json", "-o", "out", "--", "python", "c.py"])
    assert parsed.tool == ["--granularity=cta"] and parsed.command == ["python", "c.py"]
    assert parsed.own == {"-e": ["A=1"], "--json": [], "-o": ["out"]}
    with pytest.raises(UsageError, match="--name is not allowed"):
        split_proton_args(["--name", "x", "--", "python", "c.py"])


def test_usage_errors_before_anything_is_sent(tmp_path: Path) -> None:
    assert run(["proton", "--send", str(tmp_path), "--backend", "cupti", "--", "python", "c.py"]) == 2
    assert run(["proton", "--send", str(tmp_path), "--", "python", "-c", "1"]) == 2
    assert run(["proton", "--send", str(tmp_path / "absent"), "--", "python", "c.py"]) == 2


@pytest.fixture
def proton_server(server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> RunningServer:
    """The in-process server believes it can run Proton (no GPU here) and runs it in the CPU job image."""
    caps = {"proton": {"path": "python3", "version": "?", "ok": True, "reason": ""}}
    monkeypatch.setattr(jobs.capabilities, "for_server", lambda *a, **k: caps)
    monkeypatch.setattr(jobs, "_check_runnable", lambda *a: None)
    monkeypatch.setenv("KCORAL_REMOTE", server.url)
    monkeypatch.delenv("KCORAL_TOKEN", raising=False)
    return server


def test_an_image_without_proton_ends_the_job_in_one_line(
    proton_server: RunningServer, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    send = tmp_path / "send"
    send.mkdir()
    (send / "capture.py").write_text("print('never')\n")
    assert run(["proton", "--send", str(send), "-o", str(tmp_path / "out"), "--", "python", "capture.py"]) == 127
    captured = capfd.readouterr()
    said = [line for line in (captured.out + captured.err).splitlines() if "Proton is not available" in line]
    assert len(said) == 1 and "has no triton" in said[0], captured
    assert "never" not in captured.out and "Traceback" not in captured.out + captured.err


def test_the_script_runs_under_proton_and_its_summary_comes_back(
    proton_server: RunningServer, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    send = tmp_path / "send"
    for name, text in STAND_IN.items():
        (send / name).parent.mkdir(parents=True, exist_ok=True)
        (send / name).write_text(text)
    shutil.copy(TRACE, send / "spin.chrome_trace")
    out = tmp_path / "out"
    args = ["--send", str(send), "--buffer-size", "4096", "-o", str(out), "--", "python", "capture.py", "7"]
    code = run(["proton", *args])
    captured = capfd.readouterr()
    assert code == 0, captured
    assert "capture ran with ['7']" in captured.out
    assert "Proton (triton 0.0-stand-in): backend instrumentation, mode default:buffer_size=4096" in captured.err
    assert "launch 0: spin_kernel" in captured.out and "first" in captured.out
    assert sorted(p.name for p in out.iterdir()) == ["proton.chrome_trace", "proton.json"]
