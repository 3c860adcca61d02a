"""The server's tasks: every directory below a tasks dir holding a ``manifest.json`` (kcoral's own),
and every problem of a pack found there (tasks.packs: KernelBench files, GPU MODE folders).

A server may have several tasks dirs (``kcoral serve --tasks-dir DIR``, repeatable). A problem that
cannot be loaded is not a task: :func:`catalog` lists it with its reason beside the tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kcoral.protocol.errors import BadRequest
from kcoral.tasks.harness.taskdef import Task, load_task

DEFAULT_TASKS_DIR = Path(__file__).resolve().parent

#: one tasks dir, or several (Settings.tasks_dirs)
TasksDirs = Path | Sequence[Path]


@dataclass(frozen=True)
class Unloadable:
    """A pack's problem that cannot be served, and why."""

    id: str
    format: str
    path: Path
    reason: str

    def public(self) -> dict[str, object]:
        return {"id": self.id, "format": self.format, "error": self.reason}


def _dirs(tasks_dirs: TasksDirs) -> list[Path]:
    return [tasks_dirs] if isinstance(tasks_dirs, Path) else list(tasks_dirs) or [DEFAULT_TASKS_DIR]


def catalog(tasks_dirs: TasksDirs) -> tuple[list[Task], list[Unloadable]]:
    """Every task of the tasks dirs, in their order, and every problem that cannot be loaded. An id met
    twice is served from the first dir that has it; the later one is listed as unloadable."""
    from kcoral.tasks.packs import manifest as pack_manifest  # noqa: PLC0415 - the server's side only
    from kcoral.tasks.packs.recognise import scan  # noqa: PLC0415

    tasks: list[Task] = []
    broken: list[Unloadable] = []
    seen: dict[str, Path] = {}
    for root in _dirs(tasks_dirs):
        for manifest in sorted(root.rglob("manifest.json")):
            if "harness" in manifest.parts or "__pycache__" in manifest.parts:
                continue
            try:
                task = load_task(manifest.parent)
                task.id  # noqa: B018 - a manifest without an id is not a task
            except (OSError, ValueError, KeyError):
                continue
            if task.id not in seen:
                seen[task.id] = task.root
                tasks.append(task)
        for problem in scan(root):
            path = problem.folder / problem.entry
            settings, error = pack_manifest.pack_settings(problem.folder, root)
            if problem.id in seen:
                error = f"the id is taken by {seen[problem.id]}"
            if problem.error or error:
                broken.append(Unloadable(problem.id, problem.format, path, problem.error or error))
                continue
            seen[problem.id] = path
            tasks.append(Task(problem.folder, pack_manifest.manifest(problem, settings)))
    return tasks, broken


def all_tasks(tasks_dirs: TasksDirs) -> list[Task]:
    return catalog(tasks_dirs)[0]


def find_task(tasks_dirs: TasksDirs, task_id: str) -> Task:
    tasks, broken = catalog(tasks_dirs)
    for task in tasks:
        if task.id == task_id:
            return task
    for problem in broken:
        if problem.id == task_id:
            raise BadRequest(f"task {task_id!r} cannot be loaded: {problem.reason}")
    known = ", ".join(t.id for t in tasks) or "none"
    raise BadRequest(f"no task {task_id!r} on this server (tasks: {known})")


def pack_gpu_types(types: Sequence[str]) -> str:
    """``B200 or GB200 only (its pack says so)``: the GPU types a pack's task runs on, as messages name them."""
    return f"{' or '.join(types)} only (its pack says so)"


def gpu_type_for(task: Task, asked: str, have: Sequence[str]) -> str:
    """The GPU type an evaluation of ``task`` asks for: ``asked`` (a job's gpu_type, "any" for none)
    narrowed to the types the task runs on (Task.gpu_types), the first of them this server has (``have``,
    its own GPUs' types) where it was "any". A type the task does not run on is refused; a type no host
    has is refused by the placement, with the types it has."""
    if not task.gpu_types:
        return asked
    wanted = {t.lower(): t for t in task.gpu_types}
    if asked != "any":
        if asked.lower() not in wanted:
            raise BadRequest(f"task {task.id} runs on {pack_gpu_types(task.gpu_types)}; not on {asked}")
        return asked
    return next((wanted[t.lower()] for t in have if t.lower() in wanted), task.gpu_types[0])
