"""What a pack's problems build, asked of the job image (tasks.packs.inspect), never of the server.

A problem's inputs and outputs are known only by running its code, and its code may raise, hang or
crash: it runs in one short container of the jobs' profile (no GPU, no network, the packs and
kcoral's tasks/packs read-only), each problem in a child process with a deadline. Answers are kept
by the problem's content hash, so a problem is inspected once per version; a failure is kept too
(the same files fail the same way) and is the reason the problem is listed as unloadable.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kcoral.protocol.errors import BadRequest, KcoralError, ServerBusy
from kcoral.protocol.framing import STDOUT
from kcoral.runner.jobkinds import code_mounts, with_code_path
from kcoral.runner.joblog import read_pieces
from kcoral.runner.plan import ContainerStep, Executor
from kcoral.runner.serverwork import SlotSource, no_slot
from kcoral.tasks.harness.taskdef import Task

log = logging.getLogger(__name__)

#: how many of an inspection's slowest problems the server's log names, with their times
SLOWEST_LOGGED = 5
#: seconds one problem may take to build its inputs and outputs
PROBLEM_DEADLINE_S = 60.0
#: seconds the container takes beyond its problems' (its start, torch's import)
START_S = 60.0
MAX_ANSWER_BYTES = 16 << 20
MARK = b"KCORAL-INSPECT "
PACKS_MOUNT = "/packs"
#: seconds a request waits for an inspection under way (the server's start inspects every problem in one
#: container: 37 GPU-sized problems took minutes on the H200) before it is answered busy, to ask again
REQUEST_WAIT_S = 15.0


@dataclass(frozen=True)
class Inspection:
    """A problem's workloads' data as built (tasks.packs.inspect), or why it could not be built."""

    shapes: tuple[dict[str, Any], ...] = ()
    error: str = ""
    #: how long the inspector took over it (the server's log names the slowest)
    seconds: float = 0.0
    #: modules its child process had to import (the inspector imports the common ones before forking)
    imports: int = 0

    def built_on(self) -> str:
        """Where its workloads were built ("meta", "cpu", both), or its error's start."""
        return "+".join(sorted({str(s.get("built_on", "")) for s in self.shapes})) or self.error[:60]


class PackProbe:
    """Inspects pack problems in the job image, a batch per container; answers from memory afterwards."""

    def __init__(
        self, executor: Executor, image: str, python: str, data_dir: Path, slots: SlotSource = no_slot
    ) -> None:
        self.executor, self.image, self.python, self.data_dir = executor, image, python, data_dir
        #: the slot its container runs on (runner.serverwork), taken as a job's is
        self.slots = slots
        self._lock = threading.Lock()  # one container at a time; guards _known
        self._known: dict[str, Inspection] = {}
        self._since = 0.0  # when the container under way started (time.monotonic)

    def known(self, task: Task) -> Inspection | None:
        """What is known of ``task`` without running anything (None: not inspected yet)."""
        return self._known.get(task.content_hash())

    def inspect(self, tasks: list[Task], wait_s: float | None = None) -> dict[str, Inspection]:
        """Each pack task's inspection, by task id; the ones not known yet are inspected (one container).
        With ``wait_s``, an inspection already under way is waited for that long at most, then ServerBusy."""
        packs = [t for t in tasks if t.pack is not None]
        if not self._lock.acquire(timeout=-1 if wait_s is None else wait_s):
            raise ServerBusy(
                f"the server is still building its packs' problems to describe them (one container, for "
                f"{time.monotonic() - self._since:.0f} s so far); ask again in a few seconds",
                retry_after=5,
            )
        try:
            todo = {t.content_hash(): t for t in packs if t.content_hash() not in self._known}
            if todo:
                self._since = time.monotonic()
                found = self._ask(todo)
                self._known.update(found)
                failed = sum(1 for i in found.values() if i.error)
                slowest = sorted(todo, key=lambda k: found[k].seconds, reverse=True)[:SLOWEST_LOGGED]
                log.info(
                    "inspected %d pack problem(s) in %.1f s (%d cannot be loaded); the slowest: %s",
                    len(found),
                    time.monotonic() - self._since,
                    failed,
                    ", ".join(
                        f"{todo[k].id} {found[k].seconds:.1f} s ({found[k].built_on()}, {found[k].imports} imports)"
                        for k in slowest
                    ),
                )
            return {t.id: self._known[t.content_hash()] for t in packs}
        finally:
            self._lock.release()

    def start(self, tasks: list[Task]) -> None:
        """Inspect ``tasks`` in the background (the server's start: the list soon shows which cannot load)."""
        if any(t.pack is not None for t in tasks):
            threading.Thread(target=self._quietly, args=(tasks,), name="kcoral-packprobe", daemon=True).start()

    def with_shapes(self, task: Task) -> Task:
        """``task`` with its inspected shapes in its manifest (its adapter's ``signature`` reads them);
        BadRequest with the reason when the problem cannot be built."""
        found = self.known(task) or self.inspect([task], wait_s=REQUEST_WAIT_S)[task.id]
        if found.error:
            raise BadRequest(f"task {task.id} cannot be loaded: {found.error}")
        return replace(task, manifest={**task.manifest, "pack": {**(task.pack or {}), "shapes": list(found.shapes)}})

    def _quietly(self, tasks: list[Task]) -> None:
        try:
            self.inspect(tasks)
        except Exception:  # noqa: BLE001 - a background head start: a request asks again
            log.exception("inspecting the packs' problems failed")

    def _ask(self, todo: dict[str, Task]) -> dict[str, Inspection]:
        families = sorted({str(t.root.parent) for t in todo.values()})
        mounts = {family: (f"{PACKS_MOUNT}/{i}", "ro") for i, family in enumerate(families)}
        request = {
            "deadline_s": PROBLEM_DEADLINE_S,
            "problems": [
                {"key": key, "root": f"{mounts[str(t.root.parent)][0]}/{t.root.name}", "manifest": t.manifest}
                for key, t in todo.items()
            ],
        }
        # a folder of its own that stays (a container started ahead for the next probe mounts it too)
        folder = self.data_dir / "probes" / "packs"
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o755)
        (folder / "request.json").write_text(json.dumps(request))
        (folder / "request.json").chmod(0o644)
        (folder / "log").unlink(missing_ok=True)
        step = ContainerStep(
            command=[self.python, "-P", "-m", "kcoral.tasks.packs.inspect", "/request/request.json"],
            env=with_code_path({}),
            mounts={**code_mounts(self.data_dir, "tasks/packs"), str(folder): ("/request", "ro"), **mounts},
            working_dir="/tmp",
            name="inspect",
        )
        job_id = f"inspect-{int(time.time())}"
        try:
            with self.slots(None) as lease:  # a background thread's, or a request's that waits REQUEST_WAIT_S
                assert lease is not None  # waited for as long as it took
                deadline = time.monotonic() + START_S + PROBLEM_DEADLINE_S * len(todo)  # from the slot's start
                self.executor.run_group(job_id, self.image, [step], lease, deadline, threading.Event(), folder / "log")
        except KcoralError as exc:
            return dict.fromkeys(todo, Inspection(error=f"the job image could not inspect it: {exc.message}"))
        finally:
            self.executor.remove_exited(job_id)
        answer = b"".join(p.data for p in read_pieces(Path(folder) / "log", 0, MAX_ANSWER_BYTES) if p.stream == STDOUT)
        found = parse_answers(answer, set(todo))
        missing = Inspection(error="the job image gave no answer for it (the inspection stopped before it)")
        return {key: found.get(key, missing) for key in todo}


def parse_answers(answer: bytes, keys: set[str]) -> dict[str, Inspection]:
    """The inspector's lines (``KCORAL-INSPECT {...}``), strictly: known keys, shapes as lists of
    ``[dims], dtype`` pairs; anything else on stdout (a problem's prints) is ignored."""
    found: dict[str, Inspection] = {}
    for line in answer.splitlines():
        if not line.startswith(MARK):
            continue
        try:
            doc = json.loads(line[len(MARK) :])
            key = doc["key"]
            if key not in keys:
                continue
            took = _took(doc)
            if took is None:  # the child that wrote it ran the problem's code: a figure that is not one
                continue
            seconds, imports = took
            if "error" in doc:
                found[key] = Inspection(error=str(doc["error"])[:1000], seconds=seconds, imports=imports)
                continue
            found[key] = Inspection(shapes=tuple(_entry(e) for e in doc["shapes"]), seconds=seconds, imports=imports)
        except (ValueError, KeyError, TypeError):
            continue
    return found


def _took(doc: dict[str, Any]) -> tuple[float, int] | None:
    """An answer's ``seconds`` (finite, not negative) and ``imports`` (a count), or None."""
    seconds, imports = doc.get("seconds", 0.0), doc.get("imports", 0)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds < math.inf:
        return None
    if isinstance(imports, bool) or not isinstance(imports, int) or imports < 0:
        return None
    return float(seconds), imports


def _entry(doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict) or not isinstance(doc.get("params"), dict):
        raise ValueError("not an inspection")
    specs = {}
    for part in ("inputs", "outputs"):
        specs[part] = {
            str(name): [[int(d) for d in shape], str(dtype)[:40]] for name, (shape, dtype) in dict(doc[part]).items()
        }
    scalars = {
        str(k): v
        for k, v in dict(doc.get("scalars", {})).items()
        if isinstance(v, str | int | float | bool) or v is None
    }
    return {"params": doc["params"], **specs, "scalars": scalars, "built_on": str(doc.get("built_on", ""))[:10]}
