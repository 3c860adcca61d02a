"""``-e NAME=VALUE`` / ``-e NAME`` options: parsed and checked here; the server checks again.

The rules mirror the server's (runner.envpolicy), so a refusal shows up before anything is packed:
names must be identifiers; names that steer the sandbox, the GPU assignment, the dynamic loader or the
interpreter are refused, as are the names the server sets itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from kcoral.cli.errors import UsageError

__all__ = [
    "PYTHON_ALLOWED", "REFUSED_NAMES", "REFUSED_PREFIXES", "check_env_name", "parse_env_options", "refusal",
]  # fmt: skip

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

REFUSED_PREFIXES: tuple[str, ...] = (
    "LD_", "NVIDIA_", "KCORAL_", "CUDA_", "DYLD_", "GCONV_", "MALLOC_", "BASH_FUNC_",
)  # fmt: skip
#: PYTHON* names are refused (PYTHONPATH, PYTHONHOME, PYTHONSTARTUP, PYTHONUSERBASE, PYTHONSAFEPATH...)
#: except these, which only change diagnostics or encodings.
PYTHON_ALLOWED: frozenset[str] = frozenset(
    {
        "PYTHONHASHSEED", "PYTHONWARNINGS", "PYTHONFAULTHANDLER", "PYTHONDEVMODE",
        "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONTRACEMALLOC",
    }
)  # fmt: skip
REFUSED_NAMES: frozenset[str] = frozenset(
    {
        # other vendors' device selection
        "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL",
        # shells and other interpreters
        "IFS", "ENV", "BASH_ENV", "SHELLOPTS", "PERL5LIB", "PERL5OPT", "RUBYOPT", "NODE_OPTIONS",
        # set by the server for every job
        "HOME", "TMPDIR", "PATH", "XDG_CACHE_HOME", "MPLCONFIGDIR",
        "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
    }
)  # fmt: skip


def refusal(name: str) -> str | None:
    """Why ``name`` may not be sent, or None when it may."""
    if not NAME_RE.match(name):
        return f"bad environment variable name {name!r}: letters, digits and _, not a digit first"
    upper = name.upper()
    if upper in REFUSED_NAMES:
        return f"environment variable {name} is set by the server (or steers the sandbox) and cannot be sent"
    for prefix in REFUSED_PREFIXES:
        if upper.startswith(prefix):
            return f"environment variable {name} cannot be sent: {prefix}* variables control the sandbox"
    if upper.startswith("PYTHON") and upper not in PYTHON_ALLOWED:
        allowed = ", ".join(sorted(PYTHON_ALLOWED))
        return f"environment variable {name} cannot be sent: it could redirect python (allowed: {allowed})"
    return None


def check_env_name(name: str) -> None:
    """UsageError unless ``name`` may be sent."""
    why = refusal(name)
    if why:
        raise UsageError(why)


def parse_env_options(options: Iterable[str], local_env: Mapping[str, str]) -> dict[str, str]:
    """``["A=1", "B"]`` -> ``{"A": "1", "B": local_env["B"]}``; the last of repeated names wins.

    ``NAME`` alone copies the local value and is an error when the name is not set locally.
    """
    env: dict[str, str] = {}
    for option in options:
        name, sep, value = option.partition("=")
        check_env_name(name)
        if not sep:
            if name not in local_env:
                raise UsageError(f"-e {name}: not set in the local environment (use -e {name}=VALUE)")
            value = local_env[name]
        if "\x00" in value:
            raise UsageError(f"-e {name}: the value contains a NUL byte")
        env[name] = value
    return env
