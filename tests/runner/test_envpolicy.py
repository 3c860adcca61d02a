"""Pure logic: which environment names a client may set."""

import pytest

from kcoral.protocol.errors import BadRequest
from kcoral.protocol.jobenv import refusal
from kcoral.runner.envpolicy import job_environment, validate_client_env
from kcoral.runner.limits import Limits


@pytest.mark.parametrize(
    "name",
    [
        "LD_PRELOAD",
        "ld_library_path",
        "NVIDIA_VISIBLE_DEVICES",
        "CUDA_VISIBLE_DEVICES",
        "KCORAL_OUTPUT_DIR",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONSTARTUP",
        "PYTHONUSERBASE",
        "PATH",
        "HOME",
        "NCCL_NVLS_ENABLE",
        "BASH_ENV",
        "1X",
        "A-B",
        "",
        "A B",
    ],
)
def test_refused(name):
    assert refusal(name)


@pytest.mark.parametrize(
    "name",
    ["T", "BLOCK_SIZE", "NUM_WARPS2", "TRITON_PRINT_AUTOTUNING", "PYTHONHASHSEED", "CUTE_DSL_ARCH", "OMP_NUM_THREADS",
     "TORCH_CUDA_ARCH_LIST", "NCCL_DEBUG", "CUBLAS_WORKSPACE_CONFIG"],
)  # fmt: skip
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


# ----- every rule, each message, and the byte budget on both sides


@pytest.mark.parametrize("prefix", ["LD_", "NVIDIA_", "KCORAL_", "CUDA_", "DYLD_", "GCONV_", "MALLOC_", "BASH_FUNC_"])
def test_every_forbidden_prefix(prefix):
    name = prefix + "ANYTHING"
    assert refusal(name) == (f"{name} is refused: variables starting with {prefix.split('_')[0]}_ control the sandbox")
    assert refusal(name.lower()) is not None


@pytest.mark.parametrize("name", ["HOME", "PATH", "TMPDIR", "PYTHONUNBUFFERED", "home", "NCCL_NVLS_ENABLE"])
def test_server_names_cannot_be_overridden(name):
    assert refusal(name) == f"{name} is set by the server and cannot be overridden"


@pytest.mark.parametrize(
    "name",
    ["GLIBC_TUNABLES", "LOCPATH", "NLSPATH", "HOSTALIASES", "TINI_SUBREAPER", "TZDIR", "TZ", "LC_ALL", "LANG",
     "RES_OPTIONS", "IFS", "ENV", "BASH_ENV", "SHELLOPTS", "PERL5LIB", "PERL5OPT", "RUBYOPT", "NODE_OPTIONS",
     "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "TERMINFO", "PS4"],
)  # fmt: skip
def test_what_runs_before_the_job_reads_is_refused(name):
    """The deny list let these through (an issue found GLIBC_TUNABLES, LOCPATH, NLSPATH, HOSTALIASES,
    TINI_*, TZDIR passing): each is read by libc, the loader, the init, a shell or an interpreter."""
    why = refusal(name)
    assert why is not None and why.startswith(f"{name} is refused: ")


@pytest.mark.parametrize("name", ["a", "_x1", "_", "http_proxy", "Mixed", "A__B", "_A", "A_", "X" * 65])
def test_a_name_no_rule_allows_is_refused(name):
    """An allow-list: lower-case and odd names match no rule, so they are refused and told what passes."""
    why = refusal(name)
    assert why is not None and "refused" in why
    if len(name) <= 64:
        assert why.endswith("see kcoral.protocol.jobenv.ALLOWED")


@pytest.mark.parametrize(
    "name",
    [
        "PYTHONHASHSEED",
        "PYTHONWARNINGS",
        "PYTHONFAULTHANDLER",
        "PYTHONDEVMODE",
        "PYTHONIOENCODING",
        "PYTHONUTF8",
        "PYTHONTRACEMALLOC",
    ],
)
def test_every_allowed_python_variable(name):
    assert refusal(name) is None


def test_python_refusal_lists_the_allowed_names():
    assert refusal("PYTHONPATH") == (
        "PYTHONPATH is refused: it could redirect the interpreter (allowed: PYTHONDEVMODE, PYTHONFAULTHANDLER, "
        "PYTHONHASHSEED, PYTHONIOENCODING, PYTHONTRACEMALLOC, PYTHONUTF8, PYTHONWARNINGS)"
    )


@pytest.mark.parametrize("name", ["A\n", "A\nB", "1A", "A.B", "É"])
def test_invalid_names(name):
    assert refusal(name) == (
        f"{name!r} is not a valid environment variable name (letters, digits, '_'; no leading digit)"
    )


@pytest.mark.parametrize("name", ["Z9", "LDX", "CUDAX", "PYTHO", "XLD_Y", "TINIX", "LOCPATHS", "TZ2", "X" * 64])
def test_names_near_the_rules_are_allowed(name):
    assert refusal(name) is None


def test_validate_returns_a_copy_of_the_pairs():
    env = {"A": "1", "B": ""}
    got = validate_client_env(env, Limits())
    assert got == env and got is not env


def test_validate_names_the_bad_pair():
    with pytest.raises(BadRequest) as exc:
        validate_client_env({"OK": "1", "LD_PRELOAD": "x"}, Limits())
    assert exc.value.message == refusal("LD_PRELOAD")
    with pytest.raises(BadRequest) as exc:
        validate_client_env({"A": "x\x00"}, Limits())
    assert exc.value.message == "the value of A contains a NUL byte"


def test_env_byte_budget_both_sides():
    # each pair costs len(name) + len(UTF-8 value) + 2 (the '=' and the terminating NUL)
    env = {"AB": "é" * 3, "C": ""}  # (2 + 6 + 2) + (1 + 0 + 2) = 13
    assert validate_client_env(env, Limits(env_bytes=13)) == env
    with pytest.raises(BadRequest) as exc:
        validate_client_env(env, Limits(env_bytes=12))
    assert exc.value.message == "environment is 13 bytes; the limit is 12"


def test_operator_values_win_over_the_base_and_the_job_id_over_all():
    from kcoral.protocol.jobenv import BASE_JOB_ENV

    env = job_environment({"HOME": "/op", "KCORAL_JOB_ID": "op"}, {"HOME": "/client", "T": "1"}, "job-9")
    assert env["HOME"] == "/op" and env["KCORAL_JOB_ID"] == "job-9" and env["T"] == "1"
    assert env["PATH"] == BASE_JOB_ENV["PATH"]
    assert set(env) == set(BASE_JOB_ENV) | {"KCORAL_JOB_ID", "T"}
