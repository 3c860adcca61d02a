"""CUDA driver errors in words (stdlib: the server's tests read it without torch; tasks.harness.shared raises
with it)."""

from __future__ import annotations

#: the CUDA driver's errors these calls meet, by name (cuda.h's CUresult)
DRIVER_ERRORS = {
    1: "invalid value",
    2: "out of memory: the GPU has no room for the evaluation's buffers",
    3: "not initialised",
    100: "no CUDA device",
    101: "invalid device",
    201: "invalid context",
    801: "not supported on this GPU or driver",
    999: "unknown error",
}


def driver_failure(what: str, code: int) -> str:
    """A failed driver call in words: ``cuMemCreate failed with CUDA driver error 2 (out of memory: ...)``."""
    name = DRIVER_ERRORS.get(code)
    return f"{what} failed with CUDA driver error {code}" + (f" ({name})" if name else "")
