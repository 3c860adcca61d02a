"""The job environment: the server's base, the operator's additions, and the client's validated pairs.

:func:`refusal` is THE rule for names a client may set; the client (cli.envvars) checks with it
before it sends anything. Stdlib only, so the client can import it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kcoral.runner.errors import BadRequest
from kcoral.runner.limits import Limits
from kcoral.runner.settings import BASE_JOB_ENV

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

#: What a client may set: an allow-list. A name must match one of these (whole, case-sensitive), and
#: no name in RESERVED, to reach a job. Each with why it is there.
ALLOWED: tuple[tuple[str, str], ...] = (
    (r"PYTHON(HASHSEED|WARNINGS|FAULTHANDLER|DEVMODE|IOENCODING|UTF8|TRACEMALLOC)",
     "Python's diagnostics and encodings (nothing that moves imports or start-up code)"),
    (r"(TRITON|TORCH|PYTORCH|TORCHINDUCTOR|TORCHDYNAMO|NCCL|CUBLAS|CUBLASLT|CUDNN|CUTE_DSL|CUTLASS|OMP|KMP|MKL"
     r"|OPENBLAS|NUMEXPR|NUMBA|JAX|XLA|TF)_[A-Z0-9_]+",
     "the kernel tools' own knobs (compilers, autotuners, math and thread-pool libraries)"),
    (r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)*", "your own parameters: upper-case words joined by '_' (T, BLOCK_SIZE, NUM_WARPS)"),
)  # fmt: skip
#: Never passed, whatever ALLOWED says: names and prefixes read before the job's code runs (the
#: C library, the loader, the container's init, shells, other interpreters), and the GPU assignment.
RESERVED: tuple[tuple[str, str], ...] = (
    (r"(LD|DYLD|GLIBC|GCONV|MALLOC|LC|TINI|BASH_FUNC|NVIDIA|CUDA|HIP|ROCR|KCORAL)_.*",
     "variables starting with {prefix}_ control the sandbox"),
    (r"PYTHON(?!(HASHSEED|WARNINGS|FAULTHANDLER|DEVMODE|IOENCODING|UTF8|TRACEMALLOC)\Z).*",
     "it could redirect the interpreter (allowed: {python})"),
    (r"LOCPATH|NLSPATH|HOSTALIASES|RES_OPTIONS|LOCALDOMAIN|TZ|TZDIR|LANG|LANGUAGE|TERMINFO|TERMINFO_DIRS"
     r"|IFS|ENV|BASH_ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|CDPATH|GLOBIGNORE|PERL5LIB|PERL5OPT|PERLLIB"
     r"|RUBYOPT|RUBYLIB|NODE_OPTIONS|NODE_PATH|JAVA_TOOL_OPTIONS|GPU_DEVICE_ORDINAL|SSL_CERT_FILE|SSL_CERT_DIR",
     "the C library, a shell or another interpreter reads it when a program starts"),
)  # fmt: skip
_ALLOWED = [re.compile(pattern) for pattern, _ in ALLOWED]
_RESERVED = [(re.compile(pattern), why) for pattern, why in RESERVED]
_PYTHON_ALLOWED = ("PYTHONDEVMODE, PYTHONFAULTHANDLER, PYTHONHASHSEED, PYTHONIOENCODING, PYTHONTRACEMALLOC, "
                   "PYTHONUTF8, PYTHONWARNINGS")  # fmt: skip
MAX_NAME = 64


def refusal(name: str) -> str | None:
    """Why a client may not set ``name``, or None when it may."""
    if not _NAME.match(name):
        return f"{name!r} is not a valid environment variable name (letters, digits, '_'; no leading digit)"
    if name in BASE_JOB_ENV or name.upper() in BASE_JOB_ENV:
        return f"{name} is set by the server and cannot be overridden"
    if len(name) > MAX_NAME:
        return f"{name[:20]}... is refused: names are at most {MAX_NAME} characters"
    for pattern, why in _RESERVED:
        if pattern.fullmatch(name.upper()):
            reason = why.format(prefix=name.upper().split("_")[0], python=_PYTHON_ALLOWED)
            return f"{name} is refused: {reason}"
    if any(pattern.fullmatch(name) for pattern in _ALLOWED):
        return None
    return (
        f"{name} is refused: kcoral passes upper-case names of your own (T, BLOCK_SIZE), the kernel "
        "tools' knobs (TRITON_*, TORCH_*, NCCL_*, ...) and Python's diagnostics; see runner.envpolicy.ALLOWED"
    )


def validate_client_env(env: Mapping[str, str], limits: Limits) -> dict[str, str]:
    """Return the client's pairs unchanged, or raise BadRequest naming the first bad one."""
    total = 0
    for name, value in env.items():
        why = refusal(name)
        if why:
            raise BadRequest(why)
        if "\x00" in value:
            raise BadRequest(f"the value of {name} contains a NUL byte")
        total += len(name) + len(value.encode()) + 2
    if total > limits.env_bytes:
        raise BadRequest(f"environment is {total} bytes; the limit is {limits.env_bytes}")
    return dict(env)


def job_environment(operator_env: Mapping[str, str], client_env: Mapping[str, str], job_id: str) -> dict[str, str]:
    """The whole environment of a job container: client pairs cannot override the rest."""
    env = dict(client_env)
    env.update(BASE_JOB_ENV)
    env.update(operator_env)
    env["KCORAL_JOB_ID"] = job_id
    return env
