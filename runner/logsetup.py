"""The server's own log (``kcoral serve --log-format text|json``): every line about a job carries its
id. A job's threads are named ``job-ID`` (and ``job-ID/...`` for the threads they start), so a line
logged from one is tagged without each call saying so; elsewhere a call passes ``extra={"job": ID}``."""

from __future__ import annotations

import json
import logging
import threading
import time

FORMATS = ("text", "json")
#: a job's threads are named so (runner.scheduler, runner.cluster.hostagent)
JOB_THREAD = "job-"


def job_thread(job_id: str) -> str:
    return JOB_THREAD + job_id


def child_thread(part: str) -> str:
    """The name of a thread started from this one for ``part`` (``job-ID/part`` from a job's thread)."""
    return f"{threading.current_thread().name}/{part}"


class _JobTagger(logging.Filter):
    """Sets ``record.job``: the one a call passed, else the job whose thread logs it, else ""."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "job", ""):
            name = record.threadName or ""
            record.job = name[len(JOB_THREAD) :].split("/", 1)[0] if name.startswith(JOB_THREAD) else ""
        return True


class _Text(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(name)s %(levelname)s %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        line = super().formatMessage(record)
        job = getattr(record, "job", "")
        return line.replace(f" {record.levelname} ", f" {record.levelname} [job {job}] ", 1) if job else line


class _Json(logging.Formatter):
    """One JSON object per line, for log shippers: time (UTC, ISO 8601), level, logger, job, message."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, object] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if getattr(record, "job", ""):
            doc["job"] = record.job  # type: ignore[attr-defined]
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=False)


def configure(level: str, fmt: str = "text") -> None:
    """The root logger's one handler (stderr) in ``fmt``, at ``level``."""
    handler = logging.StreamHandler()
    handler.addFilter(_JobTagger())
    handler.setFormatter(_Json() if fmt == "json" else _Text())
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
