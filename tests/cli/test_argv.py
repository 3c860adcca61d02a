"""cli.argv and the python command's spec building."""

from __future__ import annotations

import pytest

from kcoral.cli.argv import build_argv
from kcoral.cli.commands.python_cmd import build_spec
from kcoral.protocol.errors import UsageError


def test_script_and_args_untouched() -> None:
    assert build_argv(["bench.py", "--flag", "x", "-e", "A=1"]) == ["bench.py", "--flag", "x", "-e", "A=1"]


def test_dash_c() -> None:
    assert build_argv(["a", "--b"], code="print(1)") == ["-c", "print(1)", "a", "--b"]


def test_dash_m() -> None:
    assert build_argv(["--n", "3"], module="pkg.bench") == ["-m", "pkg.bench", "--n", "3"]


def test_nothing_to_run() -> None:
    with pytest.raises(UsageError, match="nothing to run"):
        build_argv([])


def test_c_and_m_together() -> None:
    with pytest.raises(UsageError, match="not both"):
        build_argv([], code="x", module="y")


def test_unknown_option_before_script() -> None:
    with pytest.raises(UsageError, match="unknown option '--wat'"):
        build_argv(["--wat", "s.py"])


def test_build_spec() -> None:
    spec = build_spec(["s.py", "1"], None, None, ["A=1"], 30.0, 0)
    assert spec.argv == ["s.py", "1"] and spec.env == {"A": "1"} and spec.timeout_s == 30.0 and spec.gpus == 0
    assert spec.kind == "python"


def test_build_spec_defaults_timeout_from_model() -> None:
    assert build_spec(["s.py"], None, None, [], None, 1).timeout_s > 0


def test_build_spec_refuses_bad_timeout() -> None:
    with pytest.raises(UsageError, match="timeout_s"):
        build_spec(["s.py"], None, None, [], 0.0, 1)


def test_an_unknown_option_before_c_or_m_is_found_and_the_programs_own_are_not() -> None:
    from kcoral.cli.argv import misplaced_options

    assert misplaced_options(["python", "--fooo", "-c", "print(1)"], ["--fooo"], "-c") == ["--fooo"]
    assert misplaced_options(["python", "--bad", "-mpytest", "-x"], ["--bad", "-x"], "-m") == ["--bad"]
    assert misplaced_options(["python", "-c", "print(1)", "--flag"], ["--flag"], "-c") == []
    assert misplaced_options(["python", "-s", "d", "-m", "pytest", "-x", "-k", "t"], ["-x", "-k", "t"], "-m") == []
    assert misplaced_options(["python", "-cprint(1)", "--bad"], ["--bad"], "-c") == []
    assert misplaced_options(None, ["--x"], "-c") == []


def test_every_job_command_passes_its_gpu_type_on() -> None:
    from kcoral.cli.commands.eval_cmd import build_eval_spec
    from kcoral.cli.commands.ncu_cmd import build_ncu_spec, split_ncu_args

    assert build_spec(["s.py"], None, None, [], None, 1).gpu_type == "any"
    assert build_spec(["s.py"], None, None, [], None, 1, "H200").gpu_type == "H200"
    assert build_eval_spec("demo/softmax", None, False, "h100").gpu_type == "h100"
    parsed = split_ncu_args(["--set", "full", "--gpu-type", "H200", "--", "python3", "c.py"])
    assert parsed.last("--gpu-type") == "H200" and "--gpu-type" not in parsed.ncu
    assert build_ncu_spec(parsed, [], None, 1, "H200").gpu_type == "H200"
    with pytest.raises(UsageError, match="gpu_type"):
        build_eval_spec("demo/softmax", None, False, "H200; rm -rf /")
