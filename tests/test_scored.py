"""tests.scored, the suite's one way to ask a timed evaluation again on a noisy host: what counts as
the host's, and that it asks at most QUIET_TRIES times, stopping at the first other outcome."""

from __future__ import annotations

from typing import Any

from kcoral.protocol.errors import EXIT_INCONCLUSIVE
from tests.scored import QUIET_TRIES, cli_unscored, host_unscored, host_unscored_failure, until_scored

BUSY = "standard: other work on the host ran on the submission's core during 12% of its timed calls (111 ms), more than 10%: its times are not its own (evaluate again on a quieter host)"  # noqa: E501
DISTURBED = (
    "standard: 5 of 8 timed iterations were disturbed, more than 50%: the host was too busy to time it (evaluate again)"  # noqa: E501
)
TOO_SHORT = "standard: a median call time is not above the protocol's fixed cost (0.0100 ms): the call is too short to measure this way"  # noqa: E501


def test_only_the_hosts_reasons_without_a_score_are_asked_again() -> None:
    assert host_unscored("inconclusive", {"inconclusive": [BUSY, DISTURBED]})
    assert not host_unscored("inconclusive", {"inconclusive": [BUSY, TOO_SHORT]})  # the submission's call
    assert not host_unscored("inconclusive", {"inconclusive": []})
    assert not host_unscored("inconclusive", {"inconclusive": [BUSY], "summary": {"speedup": 1.0}})
    assert not host_unscored("ok", {"inconclusive": [BUSY]})
    assert host_unscored_failure(f"inconclusive: {BUSY}") and not host_unscored_failure(BUSY)
    assert not host_unscored_failure(f"inconclusive: {TOO_SHORT}")
    printed = f"passed: 7/7\ninconclusive: {BUSY}\ninconclusive: {DISTURBED}\n"
    assert cli_unscored(EXIT_INCONCLUSIVE, printed) and not cli_unscored(1, printed)
    assert not cli_unscored(EXIT_INCONCLUSIVE, printed + f"inconclusive: {TOO_SHORT}\n")
    assert not cli_unscored(EXIT_INCONCLUSIVE, "passed: 7/7\n")


def test_asks_until_another_outcome_and_at_most_quiet_tries_times() -> None:
    def asker(outcomes: list[str]) -> tuple[Any, list[str]]:
        asked: list[str] = []

        def evaluate() -> str:
            asked.append(outcomes[len(asked)])
            return asked[-1]

        return evaluate, asked

    evaluate, asked = asker(["unscored", "ok", "unscored"])
    assert until_scored(evaluate, lambda r: r == "unscored") == "ok" and asked == ["unscored", "ok"]
    evaluate, asked = asker(["rejected", "ok"])
    assert until_scored(evaluate, lambda r: r == "unscored") == "rejected" and len(asked) == 1
    evaluate, asked = asker(["unscored"] * (QUIET_TRIES + 2))
    assert until_scored(evaluate, lambda r: r == "unscored") == "unscored" and len(asked) == QUIET_TRIES
