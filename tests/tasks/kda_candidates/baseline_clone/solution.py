"""A diagnostic KDA candidate: the task's own baseline function (task.py's ``baseline``, loaded from
the task folder mounted in the container), so candidate and baseline run the very same code and any
difference in their times is the measurement's, not the code's. Expected: PASS, speedup ~1.0x."""

import importlib.util

PATH = "/kcoral/taskfamily/forward_b1_t8192_h96/task.py"
_spec = importlib.util.spec_from_file_location("kda_task_for_candidate", PATH)
TASK = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(TASK)


def setup(data, B, T, H):
    return TASK.baseline(data)
