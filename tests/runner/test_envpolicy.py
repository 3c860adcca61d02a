"""Pure logic: which environment names a client may set."""

import pytest

from kcoral.runner.envpolicy import job_environment, refusal, validate_client_env
from kcoral.runner.errors import BadRequest
from kcoral.runner.limits import Limits


@pytest.mark.parametrize("name", ["LD_PRELOAD", "ld_library_path", "NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
                                  "KCORAL_OUTPUT_DIR", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE",
                                  "PATH", "HOME", "NCCL_NVLS_ENABLE", "BASH_ENV", "1X", "A-B", "", "A B"])
def test_refused(name):
    assert refusal(name)


@pytest.mark.parametrize("name", ["T", "BLOCK_SIZE", "TRITON_PRINT_AUTOTUNING", "PYTHONHASHSEED", "_x1"])
def test_allowed(name):
    assert refusal(name) is None


def test_values_and_size():
    with pytest.raises(BadRequest, match="NUL"):
        validate_client_env({"A": "x\x00y"}, Limits())
    with pytest.raises(BadRequest, match="environment is"):
        validate_client_env({"A": "x" * 70000}, Limits())


def test_client_cannot_override_server_values():
    env = job_environment({"EXTRA": "1"}, {"T": "2048"}, "job-1")
    assert env["T"] == "2048" and env["EXTRA"] == "1" and env["KCORAL_JOB_ID"] == "job-1"
    assert env["KCORAL_OUTPUT_DIR"] == "/job/out" and env["HOME"] == "/tmp/home"
