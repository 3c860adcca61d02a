"""What a job image holds for a submission: its Python version and installed distributions, asked of
the image itself (one short container, the jobs' own profile, no GPU, no mounts), once per digest.

The answer is what the image printed, so it is parsed strictly (a JSON object of short strings) and
capped; it is shown to people as data, never acted on.
"""

from __future__ import annotations

import json
import re
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kcoral.protocol.errors import KcoralError
from kcoral.protocol.framing import STDOUT
from kcoral.runner.joblog import read_pieces
from kcoral.runner.plan import ContainerStep, Executor
from kcoral.runner.serverwork import SlotSource, no_slot

PROBE = (
    "import importlib.metadata as m, json, platform\n"
    "print(json.dumps({'python': platform.python_version(), 'packages': "
    "{d.metadata['Name']: d.version for d in m.distributions() if d.metadata['Name']}}))\n"
)
#: seconds the probe may take (the first start of a large image is the slow part)
PROBE_TIMEOUT_S = 60.0
MAX_ANSWER_BYTES = 256 * 1024
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}$")

#: seconds a request waits for a slot to ask the image on (every slot busy with jobs): then the contract
#: says so and the next request asks again
SLOT_WAIT_S = 10.0
BUSY = "every slot is running a job now: the image's packages are asked once one is free (ask again)"


@dataclass(frozen=True)
class ImageContents:
    python: str
    packages: dict[str, str]
    error: str = ""


class ImageProbe:
    """Asks each image digest once; answers from memory afterwards (a failure is asked again)."""

    def __init__(self, executor: Executor, python: str, scratch: Path, slots: SlotSource = no_slot) -> None:
        self.executor, self.python, self.scratch = executor, python, scratch
        #: the slot its container runs on (runner.serverwork), taken as a job's is
        self.slots = slots
        self._lock = threading.Lock()  # guards the two dicts
        self._asking: dict[str, threading.Lock] = {}  # one per digest: a burst of requests starts one container
        self._known: dict[str, ImageContents] = {}

    def contents(self, ref: str) -> ImageContents:
        try:
            image = self.executor.image_info(ref)
        except KcoralError as exc:
            return ImageContents("", {}, exc.message)
        pinned = image.digest or image.ref
        with self._lock:
            asking = self._asking.setdefault(pinned, threading.Lock())
        with asking:  # another image's probe does not wait for this one
            with self._lock:
                known = self._known.get(pinned)
            if known is not None:
                return known
            found = self._ask(pinned)
            if not found.error:
                with self._lock:
                    self._known[pinned] = found
            return found

    def _ask(self, pinned: str) -> ImageContents:
        step = ContainerStep(command=[self.python, "-I", "-c", PROBE], env={}, working_dir="/tmp", name="probe")
        self.scratch.mkdir(parents=True, exist_ok=True)
        job_id = f"probe-{int(time.time())}"
        with tempfile.TemporaryDirectory(dir=self.scratch) as folder:
            log = Path(folder) / "log"
            try:
                with self.slots(SLOT_WAIT_S) as lease:
                    if lease is None:  # not kept: asked again by the next request
                        return ImageContents("", {}, BUSY)
                    outcome = self.executor.run_group(
                        job_id, pinned, [step], lease, time.monotonic() + PROBE_TIMEOUT_S, threading.Event(), log
                    )[0]
            except KcoralError as exc:
                return ImageContents("", {}, f"the image could not be asked: {exc.message}")
            finally:
                self.executor.remove_exited(job_id)
            answer = b"".join(p.data for p in read_pieces(log, 0, MAX_ANSWER_BYTES) if p.stream == STDOUT)
        if outcome.killed or outcome.exit_code != 0:
            return ImageContents("", {}, f"the image's python did not answer (exit {outcome.exit_code})")
        return parse_answer(answer)


def parse_answer(answer: bytes) -> ImageContents:
    """The probe's printed JSON, strictly: names and versions that look like names and versions."""
    try:
        doc = json.loads(answer.decode().strip().splitlines()[-1])
        python, found = str(doc["python"]), doc["packages"]
        if not isinstance(found, dict) or not _VERSION.match(python):
            raise ValueError("unexpected shape")
    except (ValueError, KeyError, IndexError, TypeError, UnicodeDecodeError):
        return ImageContents("", {}, "the image's answer was not readable")
    packages = {
        str(n): str(v)
        for n, v in sorted(found.items(), key=lambda item: str(item[0]).lower())
        if _NAME.match(str(n)) and _VERSION.match(str(v))
    }
    return ImageContents(python, packages)
