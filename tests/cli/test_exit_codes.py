"""cli.output: THE exit-code table."""

from __future__ import annotations

import pytest

from kcoral.cli.output import VERDICT_EXIT_CODES, exit_code_for_error, exit_code_for_verdict
from kcoral.protocol.errors import (
    BadRequest,
    InputError,
    NotFound,
    ServerBusy,
    ServerError,
    ServerUnreachable,
    Unauthorized,
    UsageError,
)
from kcoral.protocol.models import Verdict


@pytest.mark.parametrize(
    ("verdict", "exit_code", "expected"),
    [
        ("ok", 0, 0),
        ("rejected", None, 1),
        ("exit", 3, 3),
        ("exit", 255, 255),
        ("exit", None, 1),
        ("exit", 0, 1),
        ("exit", 256, 1),
        ("timeout", None, 124),
        ("infrastructure_error", None, 125),
        ("cancelled", None, 130),
        ("memory_limit", 137, 137),
        ("output_limit", None, 123),
        (None, None, 0),
    ],
)
def test_verdicts(verdict: str | None, exit_code: int | None, expected: int) -> None:
    assert exit_code_for_verdict(verdict, exit_code) == expected


def test_every_verdict_has_an_entry() -> None:
    assert set(VERDICT_EXIT_CODES) == set(Verdict)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (UsageError("x"), 2),
        (InputError("x"), 2),
        (BadRequest("x", status=409), 2),
        (NotFound("x"), 2),
        (Unauthorized("x"), 77),
        (ServerUnreachable("x"), 69),
        (ServerError("x", status=500), 70),
        (ServerBusy("x", status=429), 75),
        (ServerBusy("x", status=507, retry_after=60), 75),
        (RuntimeError("x"), 70),
        (KeyboardInterrupt(), 130),
    ],
)
def test_errors(error: BaseException, expected: int) -> None:
    assert exit_code_for_error(error) == expected


def test_json_commands_print_an_error_document_when_they_fail_early(tmp_path, capsys) -> None:
    """An agent reading stdout always gets a JSON document: a failure before the command had its own
    (a bad option, a missing solution.py, an unreachable server) is one too, with the exit code."""
    import json

    from kcoral.cli.main import run

    cases = [
        (["eval", "demo/softmax", str(tmp_path), "--json", "--remote", "http://127.0.0.1:9"], 2, "UsageError"),
        (["tasks", "--json", "--remote", "http://127.0.0.1:9"], 69, "ServerUnreachable"),
        (["jobs", "--json", "--limit", "0", "--remote", "http://127.0.0.1:9"], 2, "UsageError"),
        (["eval", "demo/softmax", str(tmp_path), "--json", "--timeout", "soon"], 2, "UsageError"),
    ]
    for argv, code, kind in cases:
        assert run(argv) == code, argv
        out = capsys.readouterr().out
        doc = json.loads(out)
        assert doc["exit_code"] == code and doc["error"]["type"] == kind and doc["error"]["message"], (argv, doc)
    assert run(["tasks", "--remote", "http://127.0.0.1:9"]) == 69 and capsys.readouterr().out == ""  # no --json
