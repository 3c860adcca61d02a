"""What a person reads when the trusted side fails: tasks.evaluate.last_error (the line of the judge's log
that names it) and tasks.harness.driver_errors.driver_failure (a CUDA driver error in words)."""

from __future__ import annotations

from kcoral.tasks.evaluate import last_error
from kcoral.tasks.harness.driver_errors import driver_failure

TRACEBACK = """c05 standard: FLAKY 'capturing its batch ...'
Traceback (most recent call last):
  File "/kcoral/kcoral/tasks/harness/timedcall.py", line 71, in _side
    bufs = [shared.allocate(k, tuple(v.shape), v.dtype, self.device) for k, v in tensors.items()]
RuntimeError: cuMemCreate failed with CUDA driver error 2
"""


def test_a_tracebacks_last_line_is_the_reason() -> None:
    assert last_error(TRACEBACK) == "RuntimeError: cuMemCreate failed with CUDA driver error 2"
    assert last_error("x\ntorch.OutOfMemoryError: CUDA out of memory\n  a frame after it\n") == (
        "torch.OutOfMemoryError: CUDA out of memory"
    )
    assert last_error(TRACEBACK + "KeyboardInterrupt\n") == "KeyboardInterrupt"


def test_without_an_exception_the_last_line_and_never_an_escape_or_a_flood() -> None:
    assert last_error("started\nkilled by signal 9\n\n") == "killed by signal 9"
    assert last_error("") == last_error("\n \n") == "(its log is empty)"
    shown = last_error("ValueError: \x1b[2J" + "y" * 1000)
    assert "\x1b" not in shown and len(shown) == 400 and shown.startswith("ValueError: ")
    assert last_error("ErrorCount: 3 is not an exception's line\nsomething else") == "something else"


def test_a_driver_error_is_named() -> None:
    assert driver_failure("cuMemCreate", 2) == (
        "cuMemCreate failed with CUDA driver error 2 (out of memory: the GPU has no room for the evaluation's buffers)"
    )
    assert driver_failure("cuMemMap", 12345) == "cuMemMap failed with CUDA driver error 12345"
