"""What a job sees of its environment, which both sides know: where its input and outputs are, the
variables the server always sets, and THE rule for names a client may set (:func:`refusal`; the
client checks with it before it sends anything, the server again: runner.envpolicy). Stdlib only.
"""

from __future__ import annotations

import re

#: where a job's container finds its writable output folder (the server copies it out afterwards)
OUTPUT_MOUNT = "/job/out"
#: the sent directory, read-only: the job's working directory
INPUT_MOUNT = "/job/input"

#: Environment every job gets. Clients cannot override these names (see :func:`refusal`).
BASE_JOB_ENV = {
    "HOME": "/tmp/home",
    "TMPDIR": "/tmp",
    "PATH": "/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "PYTHONUNBUFFERED": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "XDG_CACHE_HOME": "/tmp/home/.cache",
    "MPLCONFIGDIR": "/tmp/home/.config/matplotlib",
    "KCORAL_OUTPUT_DIR": OUTPUT_MOUNT,
    # NVLink multicast can take a shared host's GPUs out of service: keep it off in every job.
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}

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
        "tools' knobs (TRITON_*, TORCH_*, NCCL_*, ...) and Python's diagnostics; see kcoral.protocol.jobenv.ALLOWED"
    )
