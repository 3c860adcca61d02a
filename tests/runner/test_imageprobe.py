"""What a job image says it holds is parsed strictly: it is the image's own output."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from kcoral.protocol.framing import STDERR, STDOUT
from kcoral.protocol.models import ImageInfo
from kcoral.runner.imageprobe import ImageContents, ImageProbe, parse_answer
from kcoral.runner.joblog import LogWriter
from kcoral.runner.plan import StepOutcome


def answer(doc: object) -> bytes:
    return ("some noise first\n" + json.dumps(doc) + "\n").encode()


def test_names_and_versions_are_kept_sorted_case_blind() -> None:
    found = parse_answer(answer({"python": "3.11.2", "packages": {"torch": "2.5.1+cpu", "Numpy": "1.26.4"}}))
    assert found.python == "3.11.2" and not found.error
    assert list(found.packages.items()) == [("Numpy", "1.26.4"), ("torch", "2.5.1+cpu")]


def test_entries_that_are_not_a_name_and_a_version_are_dropped() -> None:
    hostile = {"\x1b]52;c;x\x07": "1.0", "ok": "1.0", "spaces in name": "1", "long": "9" * 200, "n": "1;rm -rf"}
    found = parse_answer(answer({"python": "3.12.0", "packages": hostile}))
    assert found.packages == {"ok": "1.0"}


@pytest.mark.parametrize(
    "raw",
    [b"", b"not json", b"\xff\xfe", answer([1]), answer({"python": "3"}), answer({"python": "3 x", "packages": {}}),
     answer({"python": "3.11", "packages": []})],
)  # fmt: skip
def test_an_unreadable_answer_is_an_error_not_a_crash(raw: bytes) -> None:
    found = parse_answer(raw)
    assert found.error == "the image's answer was not readable" and found.packages == {} and found.python == ""


class SlowImages:
    """An executor for pure logic: each probe takes 0.3 s and answers on stdout, with noise on stderr."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.running = 0
        self.most_at_once = 0
        self.lock = threading.Lock()

    def image_info(self, ref: str) -> ImageInfo:
        return ImageInfo(ref=ref, digest=f"sha256:{ref}")

    def run_group(self, job_id, image, steps, lease, deadline, cancel, job_log) -> list[StepOutcome]:  # noqa: ANN001
        with self.lock:
            self.asked.append(image)
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        time.sleep(0.3)
        with LogWriter(job_log) as log:
            log.append(STDERR, b"a warning from site.py\n")
            log.append(STDOUT, json.dumps({"python": "3.11.7", "packages": {"torch": "2.5.1"}}).encode() + b"\n")
            log.append(STDERR, b"{not json\n")
        with self.lock:
            self.running -= 1
        return [StepOutcome(None, 0, False, 0)]

    def remove_exited(self, job_id: str) -> None:
        pass


def test_each_image_is_asked_once_and_two_images_at_the_same_time(tmp_path: Path) -> None:
    images = SlowImages()
    probe = ImageProbe(images, "python3", tmp_path)
    answers: list[ImageContents] = []
    threads = [threading.Thread(target=lambda r=ref: answers.append(probe.contents(r))) for ref in "aabb"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(images.asked) == ["sha256:a", "sha256:b"] and images.most_at_once == 2
    assert all(a == ImageContents("3.11.7", {"torch": "2.5.1"}) for a in answers)  # stderr is not the answer
