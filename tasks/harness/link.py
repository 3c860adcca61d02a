"""The supervisor's link to one worker process (tasks.harness.worker): its channel, whether it is trusted,
and what its silence means.

A trusted worker (the baseline's, the empty call's) that fails or stops answering is the judge's failure:
the evaluation ends without a result (the server's infrastructure error). The candidate's is the
candidate's: its case is an ERROR with the reason (:class:`CandidateGone`), and so is every later one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, NoReturn

from kcoral.tasks.harness import schema
from kcoral.tasks.harness.channel import Channel, ChannelError, NoAnswer


class CandidateGone(Exception):
    """The candidate's worker stopped answering: every later case is an ERROR with this reason."""


@dataclass
class Worker:
    name: str
    chan: Channel
    trusted: bool
    timeout: float
    #: when the evaluation's time limit ends (time.time(); 0: not said) and the seconds kept before it for
    #: ending: no answer is waited for past that, so a silent worker still leaves a result and a report (the
    #: candidate's: tasks.harness.session; a trusted one keeps its call's limit, the clean-up asks it)
    deadline: float = 0.0
    margin: float = 0.0
    gone: str = ""
    #: poll for its answers instead of sleeping (set while a case is timed with it on another core
    #: than the supervisor's: :meth:`Supervisor._pin`)
    spin: bool = False
    #: ns from a trusted worker's stamp on its last answer (CLOCK_MONOTONIC, taken as it sent it) to
    #: this process reading it; 0 for the candidate's (its stamp is its own word) or an answer without one
    answer_lag_ns: int = 0
    #: its last ok answer, as it said it (a setup's carries ``state``: tasks.harness.worker); kept as it
    #: came, not copied: answers are read inside timed windows
    said: dict[str, Any] = field(default_factory=dict)

    def ask(self, message: dict[str, Any], fds: list[int] | None = None) -> str | None:
        """Send one operation; None when the worker answered ok, else its error text."""
        self.send(message, fds)
        return self.answer()

    def send(self, message: dict[str, Any], fds: list[int] | None = None) -> None:
        """Send one operation without waiting: :meth:`answer` collects what the worker says to it."""
        if self.gone:
            self._raise_gone()
        try:
            self.chan.send(message, fds)
        except ChannelError as exc:
            self._lost(exc)

    def answer(self) -> str | None:
        """The worker's answer to the oldest operation not yet answered: None for ok, else its error."""
        if self.gone:
            self._raise_gone()
        patience = self.patience()
        try:
            answer = self.chan.recv(patience, spin=self.spin)
        except ChannelError as exc:
            self._lost(exc, patience)
        seen, sent = time.monotonic_ns(), answer.get("at")
        self.answer_lag_ns = max(0, seen - sent) if self.trusted and type(sent) is int else 0
        if answer.get("ok") is True:
            self.said = answer
            return None
        error = answer.get("error")
        text = error if isinstance(error, str) else f"a malformed answer {str(answer)[:200]!r}"
        if self.trusted:
            raise RuntimeError(f"the {self.name} failed: {text}")
        return text[: schema.MAX_TEXT]

    def patience(self) -> float:
        """Seconds an answer is waited for: the call's limit, or less where the evaluation's deadline
        (less its margin) comes first."""
        if not self.deadline:
            return self.timeout
        return max(0.0, min(self.timeout, self.deadline - self.margin - time.time()))

    def _lost(self, exc: ChannelError, patience: float | None = None) -> NoReturn:
        why = str(exc)
        if patience is not None and patience < self.timeout and isinstance(exc, NoAnswer):
            why = f"no answer within {patience:.1f} s, what was left of the evaluation's time limit"
        self.gone = f"the {self.name}'s worker stopped answering: {why}"
        self._raise_gone()

    def _raise_gone(self) -> NoReturn:
        """The candidate's worker gone is its case's error; a trusted one gone is the judge's failure
        (the evaluation ends without a result: the server's infrastructure error), every time it is
        asked again too (a clean-up's question must not turn it into the candidate's)."""
        if self.trusted:
            raise RuntimeError(self.gone) from None
        raise CandidateGone(self.gone) from None


def hello(worker: Worker) -> str | None:
    """The worker's first message: ok, or why it cannot serve (the submission did not import)."""
    try:
        answer = worker.chan.recv(worker.patience())
    except ChannelError as exc:
        worker.gone = f"the {worker.name}'s worker did not start: {exc}"
        if worker.trusted:
            raise RuntimeError(worker.gone) from None
        return worker.gone
    if answer.get("ok") is True:
        return None
    error = answer.get("error")
    worker.gone = (error if isinstance(error, str) else "the worker did not start")[: schema.MAX_TEXT]
    if worker.trusted:
        raise RuntimeError(worker.gone)
    return worker.gone
