"""The job hosts' options (runner.server_options): each defined once, each set by its flag or by
``KCORAL_<NAME>``; `kcoral agent` takes the options it shares with `kcoral serve` from the same table."""

from __future__ import annotations

import typing

import pytest
import typer

from kcoral.cli.main import run
from kcoral.runner.cluster.agent_command import agent
from kcoral.runner.serve_command import serve


def test_every_option_of_the_job_host_commands_has_its_environment_variable() -> None:
    for command in (serve, agent):
        hints = typing.get_type_hints(command, include_extras=True)
        for name, hint in hints.items():
            if name in ("return", "ray_address", "host_name", "node_name"):
                continue
            if name == "limit":  # one variable per limit instead: KCORAL_LIMIT_<NAME> (runner.limits)
                continue
            option = next(m for m in typing.get_args(hint)[1:] if isinstance(m, typer.models.OptionInfo))
            assert option.envvar == "KCORAL_" + name.upper(), (command.__name__, name, option.envvar)


def test_the_agent_shares_the_servers_options_not_copies() -> None:
    served = typing.get_type_hints(serve, include_extras=True)
    hosted = typing.get_type_hints(agent, include_extras=True)
    shared = set(served) & set(hosted) - {"return"}
    assert shared == {
        "data_dir", "gpus", "cpu_slots", "image", "host_toolchain", "gpu_mode", "python", "job_env", "tasks_dir",
        "standby", "log_level", "limit", "job_cgroup",
    }  # fmt: skip
    for name in shared:
        assert typing.get_args(served[name])[1] is typing.get_args(hosted[name])[1], name


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("KCORAL_GPU_MODE", "bogus", "--gpu-mode must be auto, runtime or devices"),
        ("KCORAL_CPU_SLOTS", "-1", "-1"),
        ("KCORAL_JOB_CGROUP", "../../tmp/x", "--job-cgroup takes one folder name"),
        ("KCORAL_JOB_CGROUP", "/tmp/x", "--job-cgroup takes one folder name"),
        ("KCORAL_JOB_CGROUP", "..", "--job-cgroup takes one folder name"),
    ],
)
def test_an_environment_variable_sets_the_option_and_is_checked_like_it(
    name: str, value: str, said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(name, value)
    assert run(["serve"]) == 2
    assert said in capsys.readouterr().err


def test_the_help_lists_the_variables(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    assert run(["serve", "--help"]) == 0
    out = capsys.readouterr().out
    for name in ("KCORAL_DATA_DIR", "KCORAL_GPUS", "KCORAL_WARM_UP", "KCORAL_SHUTDOWN_GRACE", "KCORAL_RAY"):
        assert name in out


@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        (["--limit", "pids=0"], {}, "limit pids: '0' must be above 0 (count)"),
        (["--limit", "memory"], {}, "--limit takes NAME=VALUE, got 'memory'"),
        ([], {"KCORAL_LIMIT_MEMORY_BYTES": "lots"}, "limit memory_bytes: 'lots' is not a number (bytes)"),
        (["--limit", "nosuch=1"], {}, "no limit named 'nosuch'"),
        (["--limit", "calibration_confidence=1"], {}, "limit calibration_confidence: 1.0 must be at least 0.5"),
    ],
)
def test_a_bad_limit_is_refused_naming_it(
    args: list[str], env: dict[str, str], said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("COLUMNS", "300")
    assert run(["serve", *args]) == 2
    assert said in capsys.readouterr().err


def test_limits_come_from_the_environment_and_the_flag_wins() -> None:
    """KCORAL_LIMIT_NAME sets a limit, --limit NAME=VALUE over it; sizes take KiB/MiB/GiB; the connection
    limits are there too; every limit an operator may set is in the help's table with its default."""
    from kcoral.runner import limits
    from kcoral.runner.server_options import parse_limits

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KCORAL_LIMIT_MEMORY_BYTES", "16GiB")
        mp.setenv("KCORAL_LIMIT_PIDS", "100")
        job, conn = parse_limits(["pids=1024", "connection_total=50", "cpus=1.5"])
    assert (job.memory_bytes, job.pids, job.cpus, conn.total) == (16 << 30, 1024, 1.5, 50)
    assert job.nofile == limits.Limits().nofile and conn.per_client == limits.ConnectionLimits().per_client
    table = limits.help_table()
    assert "memory_bytes: 8 GiB" in table and "connection_head_timeout_s: 10 s" in table
    assert len(table.splitlines()) == len(limits.settable()) >= 25


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--host", "0.0.0.0"], "refusing to listen on 0.0.0.0 without --tokens-file: anyone could run jobs"),
        (["--calibrate", "3"], "--calibrate follows each --warm-up TASK's warm-up"),
    ],
)
def test_serve_refuses_to_start_where_it_would_be_unsafe_or_meaningless(
    argv: list[str], message: str, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run(["serve", "--data-dir", str(tmp_path / "data"), "--port", "1", *argv])
    assert code == 2
    assert message in " ".join(capsys.readouterr().err.split())
