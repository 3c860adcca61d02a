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
#: the dynamic loader, the GPU assignment, the sandbox's own variables, libc hooks, bash functions
_FORBIDDEN_PREFIXES = ("LD_", "NVIDIA_", "KCORAL_", "CUDA_", "DYLD_", "GCONV_", "MALLOC_", "BASH_FUNC_")
#: PYTHON* names are refused (PYTHONPATH, PYTHONHOME, PYTHONSTARTUP, PYTHONUSERBASE, PYTHONSAFEPATH...)
#: except these, which only change diagnostics or encodings
_PYTHON_ALLOWED = {
    "PYTHONHASHSEED",
    "PYTHONWARNINGS",
    "PYTHONFAULTHANDLER",
    "PYTHONDEVMODE",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "PYTHONTRACEMALLOC",
}
#: other vendors' device selection; shells' and other interpreters' start-up hooks
_FORBIDDEN_NAMES = {
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
    "IFS",
    "ENV",
    "BASH_ENV",
    "SHELLOPTS",
    "PERL5LIB",
    "PERL5OPT",
    "RUBYOPT",
    "NODE_OPTIONS",
}


def refusal(name: str) -> str | None:
    """Why a client may not set ``name``, or None when it may."""
    if not _NAME.match(name):
        return f"{name!r} is not a valid environment variable name (letters, digits, '_'; no leading digit)"
    upper = name.upper()
    if upper in BASE_JOB_ENV or upper in _FORBIDDEN_NAMES:
        return f"{name} is set by the server and cannot be overridden"
    if upper.startswith(_FORBIDDEN_PREFIXES):
        return f"{name} is refused: variables starting with {upper.split('_')[0]}_ control the sandbox"
    if upper.startswith("PYTHON") and upper not in _PYTHON_ALLOWED:
        return f"{name} is refused: it could redirect the interpreter (allowed: {', '.join(sorted(_PYTHON_ALLOWED))})"
    return None


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
