"""Finding problems in a tasks directory by their content, without running any of their code.

A ``.py`` file with ``class Model`` and ``def get_inputs`` at the start of a line is a KernelBench
problem; a folder with ``task.yml`` is a GPU MODE problem. Each is parsed (``ast``; the YAML as
data) and checked for what its format needs; what is missing or unparsable becomes the problem's
``error``, so the problem is still listed, with its reason. Nothing here imports a problem.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KERNELBENCH = "kernelbench"
GPUMODE = "gpumode"
#: the most bytes of a problem's file that are read (a larger one is listed as unloadable)
MAX_FILE_BYTES = 1 << 20
#: folders never searched for problems
SKIP = frozenset({"__pycache__", "harness", "node_modules"})
#: what makes a .py file a KernelBench problem (then it must also parse and define all of KB_NAMES)
_KB_MODEL = re.compile(r"^class\s+Model\b", re.MULTILINE)
_KB_INPUTS = re.compile(r"^def\s+get_inputs\b", re.MULTILINE)
KB_NAMES = ("Model", "get_inputs", "get_init_inputs")
GM_NAMES = ("generate_input", "ref_kernel", "check_implementation")
#: a part of a task id (a file or folder name)
_ID_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}")


@dataclass(frozen=True)
class Problem:
    """One problem found in a tasks directory; ``error`` says why it cannot be loaded ("": it can)."""

    format: str
    id: str
    #: the folder the problem's own files are in (a KernelBench file's folder, a GPU MODE problem's folder)
    folder: Path
    #: the problem's code: the KernelBench file's name, or "reference.py"
    entry: str
    #: every file the problem's code may read, relative to ``folder.parent`` (its family folder)
    files: tuple[str, ...] = ()
    #: GPU MODE: the task.yml's parts kcoral uses (tests, benchmarks, description, templates, timeouts)
    spec: dict[str, Any] = field(default_factory=dict)
    #: the docstring of KernelBench's Model, or GPU MODE's description
    description: str = ""
    error: str = ""


def scan(root: Path) -> list[Problem]:
    """Every problem below ``root``, in path order. kcoral's own task folders (``manifest.json``) and
    hidden folders are left out; links are not followed."""
    found: list[Problem] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP)
        here = Path(folder)
        if "manifest.json" in files:  # a kcoral task (tasks.harness.taskdef), not a pack
            dirs[:] = []
            continue
        if "task.yml" in files:
            found.append(gpumode(here))
            dirs[:] = []
            continue
        for name in sorted(files):
            if name.endswith(".py") and (problem := kernelbench(here / name)) is not None:
                found.append(problem)
    return found


def kernelbench(path: Path) -> Problem | None:
    """The KernelBench problem in ``path``, or None if the file is not one (kept per file version: a
    server lists a folder of hundreds on every request)."""
    try:
        st = path.lstat()
    except OSError:
        return None
    return _kernelbench(path, st.st_mtime_ns, st.st_size, st.st_ino)


@functools.lru_cache(maxsize=4096)
def _kernelbench(path: Path, mtime_ns: int, size: int, inode: int) -> Problem | None:
    text, error = _read(path)
    if text is None:
        return (
            None
            if error is None
            else Problem(KERNELBENCH, _id(KERNELBENCH, path.parent, path.stem), path.parent, path.name, error=error)
        )
    if not (_KB_MODEL.search(text) and _KB_INPUTS.search(text)):
        return None
    pid = _id(KERNELBENCH, path.parent, path.stem)
    files = (f"{path.parent.name}/{path.name}",)
    names, error, tree = _names(text, path.name)
    if not error:
        missing = [n for n in KB_NAMES if n not in names]
        error = f"{path.name} does not define {', '.join(missing)}" if missing else ""
    if not error and not _is_id(path.parent.name, path.stem):
        error = f"{path.parent.name}/{path.stem}: a task id takes letters, digits, '_', '.', '+' and '-' only"
    doc = ""
    if tree is not None:
        model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
        doc = (ast.get_docstring(model) or "") if model is not None else ""
    return Problem(KERNELBENCH, pid, path.parent, path.name, files, description=doc, error=error)


def gpumode(folder: Path) -> Problem:
    """The GPU MODE problem in ``folder`` (it holds task.yml), with the reason it cannot be loaded."""
    pid = _id(GPUMODE, folder.parent, folder.name)
    files = tuple(
        sorted(
            [f"{folder.name}/{p.name}" for p in folder.iterdir() if p.is_file() and not p.is_symlink()]
            + [p.name for p in folder.parent.glob("*.py") if p.is_file() and not p.is_symlink()]
        )
    )

    def broken(reason: str, spec: dict[str, Any] | None = None) -> Problem:
        return Problem(GPUMODE, pid, folder, "reference.py", files, spec or {}, error=reason)

    if not _is_id(folder.parent.name, folder.name):
        return broken(
            f"{folder.parent.name}/{folder.name}: a task id takes letters, digits, '_', '.', '+' and '-' only"
        )
    spec, error = _task_yml(folder / "task.yml")
    if error:
        return broken(error)
    text, unread = _read(folder / "reference.py")
    if text is None:
        return broken(unread or "no reference.py beside task.yml", spec)
    names, error, _ = _names(text, "reference.py")
    if error:
        return broken(error, spec)
    missing = [n for n in GM_NAMES if n not in names]
    if missing:
        return broken(f"reference.py does not define {', '.join(missing)}", spec)
    return Problem(GPUMODE, pid, folder, "reference.py", files, spec, description=str(spec.get("description", "")))


def _task_yml(path: Path) -> tuple[dict[str, Any], str]:
    """The parts of task.yml kcoral uses, checked; or the reason they are unusable."""
    import yaml  # noqa: PLC0415 - the server's only YAML (the job image has none: see tasks.packs.manifest)

    text, error = _read(path)
    if text is None:
        return {}, error or "task.yml cannot be read"
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return {}, f"task.yml is not YAML: {str(exc).splitlines()[0][:200]}"
    if not isinstance(doc, dict):
        return {}, "task.yml is not a mapping"
    spec: dict[str, Any] = {}
    for key in ("tests", "benchmarks"):
        cases = doc.get(key)
        if not isinstance(cases, list) or not cases:
            return {}, f"task.yml has no {key} (a list of keyword dicts, each with a seed)"
        for i, case in enumerate(cases):
            if not isinstance(case, dict) or not all(isinstance(k, str) for k in case):
                return {}, f"task.yml {key}[{i}] is not a dict of keywords"
            if isinstance(case.get("seed"), bool) or not isinstance(case.get("seed"), int):
                return {}, f"task.yml {key}[{i}] has no integer seed"
            if not all(isinstance(v, str | int | float | bool) or v is None for v in case.values()):
                return {}, f"task.yml {key}[{i}]: keyword values must be numbers, strings or booleans"
        spec[key] = cases
    spec["description"] = str(doc.get("description") or "").strip()
    templates = doc.get("templates")
    spec["templates"] = {str(k): str(v) for k, v in templates.items()} if isinstance(templates, dict) else {}
    spec["timeouts"] = {
        k: float(v)
        for k in ("test_timeout", "benchmark_timeout", "ranked_timeout")
        if isinstance(v := doc.get(k), int | float)
    }
    return spec, ""


def _read(path: Path) -> tuple[str | None, str | None]:
    """(text, None), or (None, why) for a file that cannot be read, or (None, None) where there is none."""
    try:
        if path.is_symlink() or not path.is_file():
            return None, None
        if path.stat().st_size > MAX_FILE_BYTES:
            return None, f"{path.name} is over {MAX_FILE_BYTES} bytes"
        return path.read_bytes().decode(), None
    except UnicodeDecodeError:
        return None, f"{path.name} is not UTF-8 text"
    except OSError as exc:
        return None, f"{path.name} cannot be read: {exc.strerror}"


def _names(text: str, name: str) -> tuple[set[str], str, ast.Module | None]:
    """The names a module defines at its top level (also inside top-level if/try blocks), the reason it
    does not parse, and its tree."""
    try:
        tree = ast.parse(text, name)
    except (SyntaxError, ValueError) as exc:
        line = f" line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
        msg = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        return set(), f"{name} does not parse:{line} {msg}", None
    names: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.If | ast.Try):
            todo += [*node.body, *node.orelse, *getattr(node, "finalbody", [])]
            for handler in getattr(node, "handlers", []):
                todo += handler.body
    return names, "", tree


def _id(fmt: str, parent: Path, name: str) -> str:
    return f"{fmt}/{parent.name}/{name}"


def _is_id(*parts: str) -> bool:
    return all(_ID_PART.fullmatch(p) for p in parts)
