"""Timed evaluations whose score a test reads, asked again while the host leaves them unscored.

On CI's two shared cores another process now and then runs on the submission's core, or disturbs the
judge's, long enough that an evaluation ends ``inconclusive``: every check passed, no score, and the
report's reason says "evaluate again" (CI at 2120572: the template's batch evaluation, 12% of its timed
calls shared the core). A test that reads a score asks again, as a user would, at most QUIET_TRIES times
in all; an evaluation scored, failed, or inconclusive for any other reason is returned at once, so the
test's own assertions judge it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kcoral.protocol.errors import EXIT_INCONCLUSIVE
from tests.conftest import RunningServer

T = TypeVar("T")

#: evaluations asked at most, while the host leaves them unscored
QUIET_TRIES = 3
#: what every reason of the host's (tasks.report) tells the user
EVALUATE_AGAIN = "evaluate again"


def host_unscored(verdict: str, report: Mapping[str, Any]) -> bool:
    """Inconclusive for the host's reasons only, with no score to read as a gain."""
    reasons = report.get("inconclusive") or []
    return (
        verdict == "inconclusive"
        and bool(reasons)
        and all(EVALUATE_AGAIN in why for why in reasons)
        and not report.get("summary")
    )


def pair_unscored(result: tuple[Any, ...]) -> bool:
    """:func:`host_unscored` of an evaluation read as ``(job, report, ...)``."""
    return host_unscored(result[0]["verdict"], result[1])


def host_unscored_failure(failure: str) -> bool:
    """A one-line failure (kcoral eval's, the library's ``failure``, the MCP tools') that is the host's."""
    return failure.startswith("inconclusive: ") and EVALUATE_AGAIN in failure


def job_unscored(srv: RunningServer, job: Mapping[str, Any]) -> bool:
    """A finished evaluation on ``srv`` (its JobView) that the host left unscored (its report.json read)."""
    if job["verdict"] != "inconclusive":
        return False
    r = srv.http.get(f"/v1/jobs/{job['id']}/outputs/report.json")
    return r.status_code == 200 and host_unscored(job["verdict"], r.json())


def cli_unscored(code: int, out: str) -> bool:
    """``kcoral eval`` left unscored by the host: exit 3, each ``inconclusive:`` line it printed the host's."""
    said = [line for line in out.splitlines() if line.startswith("inconclusive: ")]
    return code == EXIT_INCONCLUSIVE and bool(said) and all(host_unscored_failure(line) for line in said)


def until_scored(evaluate: Callable[[], T], unscored: Callable[[T], bool]) -> T:
    """``evaluate()`` again while ``unscored`` says its result is :func:`host_unscored`; the last result."""
    for _ in range(QUIET_TRIES - 1):
        result = evaluate()
        if not unscored(result):
            return result
    return evaluate()
