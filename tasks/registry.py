"""The server's tasks: every directory below the tasks dir holding a ``manifest.json``."""

from __future__ import annotations

from pathlib import Path

from kcoral.protocol.errors import BadRequest
from kcoral.tasks.harness.taskdef import Task, load_task

DEFAULT_TASKS_DIR = Path(__file__).resolve().parent


def all_tasks(tasks_dir: Path) -> list[Task]:
    found = []
    for manifest in sorted(tasks_dir.rglob("manifest.json")):
        if "harness" in manifest.parts or "__pycache__" in manifest.parts:
            continue
        try:
            found.append(load_task(manifest.parent))
        except (OSError, ValueError, KeyError):
            continue
    return found


def find_task(tasks_dir: Path, task_id: str) -> Task:
    for task in all_tasks(tasks_dir):
        if task.id == task_id:
            return task
    known = ", ".join(t.id for t in all_tasks(tasks_dir)) or "none"
    raise BadRequest(f"no task {task_id!r} on this server (tasks: {known})")
