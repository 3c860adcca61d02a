"""``kcoral verify RECEIPT``: was this receipt signed by that server's key, over exactly what it says?
Offline against a public key file (``--key``), or against a server's GET /v1/keys (``--remote``). It
says what a valid signature proves and what it does not (kcoral.protocol.receipts).

Exit status: 0 valid, 1 invalid (the reason in one line), 2 a usage error (no key given, a file that
cannot be read or is not a key), 69 the server of ``--remote`` does not answer.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from kcoral.cli.commands.common import JsonOption, connect
from kcoral.cli.output import emit_json
from kcoral.protocol.errors import UsageError
from kcoral.protocol.models import Score
from kcoral.protocol.printable import printable
from kcoral.protocol.typeddata import DataError, from_data

#: the most bytes of a receipt or a key file that are read
MAX_FILE_BYTES = 64 << 20

ReceiptArgument = Annotated[
    str,
    typer.Argument(
        help="a receipt.json (among an evaluation's outputs), or - to read it from stdin",
        show_default=False,
        metavar="RECEIPT",
    ),
]
KeyOption = Annotated[
    Path | None,
    typer.Option(
        "--key",
        help="check offline against this public key file: GET /v1/keys's answer saved, a PEM public key, or the "
        "key's 32 bytes in base64",
        show_default=False,
    ),
]
VerifyRemoteOption = Annotated[
    str | None,
    typer.Option(
        "--remote",
        "-r",
        envvar="KCORAL_REMOTE",
        help="check against this server's public keys (GET /v1/keys), e.g. https://gpu.example:8901",
        show_default=False,
    ),
]


def verify(
    ctx: typer.Context, receipt: ReceiptArgument, key: KeyOption = None, remote: VerifyRemoteOption = None,
    json: JsonOption = False,
) -> None:  # fmt: skip
    """Check a receipt's signature, offline with --key FILE or against --remote URL's public keys, and say
    what it proves (that key signed exactly this statement) and what it does not (that the timing was
    honest is that server's claim).

    Exit status: 0 valid, 1 invalid (the reason in one line), 2 usage error, 69 the server does not answer.
    """
    from kcoral.protocol.receipts import DOES_NOT_PROVE, PROVES, ReceiptError, read_keys
    from kcoral.protocol.receipts import verify as check

    source = ctx.get_parameter_source("remote")
    if key is not None and remote and source is not None and source.name == "COMMANDLINE":
        raise UsageError("give --key FILE or --remote URL, not both")
    data = _read(receipt, "the receipt")
    if key is not None:
        try:
            keys = read_keys(_read(str(key), "--key"))
        except ReceiptError as exc:
            raise UsageError(f"--key {key}: {exc}") from None
    elif remote:
        with connect(remote, None) as client:
            keys = client.keys().keys
    else:
        raise UsageError("nothing to check against: give --key FILE (offline) or --remote URL (its GET /v1/keys)")
    found = check(data, keys)
    if json:
        emit_json(_document(found.valid, found.reason, found.key_id, found.statement, PROVES, DOES_NOT_PROVE))
    elif found.valid:
        typer.echo(f"valid: {printable(found.reason)}")
        for line in _facts(found.statement):
            typer.echo(f"  {printable(line)}")
        typer.echo(f"proves: {PROVES}")
        for line in DOES_NOT_PROVE:
            typer.echo(f"does not prove: {line}")
    else:
        typer.echo(f"invalid: {printable(found.reason)}")
    raise typer.Exit(0 if found.valid else 1)


def _read(path: str, what: str) -> bytes:
    try:
        if path == "-":
            return sys.stdin.buffer.read(MAX_FILE_BYTES + 1)[:MAX_FILE_BYTES]
        with open(path, "rb") as f:
            return f.read(MAX_FILE_BYTES)
    except OSError as exc:
        raise UsageError(f"{what}: cannot read {path}: {exc.strerror or exc}") from None


def _document(
    valid: bool, reason: str, key_id: str, statement: dict[str, Any], proves: str, not_proved: tuple[str, ...]
) -> dict[str, Any]:
    """--json's document: the verdict, what the statement binds, and what the signature proves."""
    doc: dict[str, Any] = {"valid": valid, "reason": reason, "key_id": key_id, "exit_code": 0 if valid else 1}
    if valid:
        names = [
            *("server", "job", "task", "task_version", "manifest_sha256", "label", "submission_digest", "image"),
            *("judge_code_sha256", "verdict", "score", "gpus", "times", "same_submission"),
        ]
        doc["statement"] = {n: statement[n] for n in names if n in statement}
        doc["proves"], doc["does_not_prove"] = proves, list(not_proved)
    return doc


#: what a check's receipt says beside its verdict (``kcoral eval --check``): its "ok" is not a score's
CHECK_WORDS = " (a check: correctness of the public workloads only, no holdout, no timing)"


def _facts(s: dict[str, Any]) -> list[str]:
    """The statement's main facts, a line each (the rest: --json, or the receipt itself)."""
    version = f" version {s['task_version']}" if s.get("task_version") else ""
    label = f" ({s['label']})" if s.get("label") else ""
    lines = [
        f"job {s.get('job', '-')}{label}, task {s.get('task', '-')}{version}, manifest {s.get('manifest_sha256', '-')}",
        f"submission {s.get('submission_digest') or s.get('submission_sha256', '-')}",
        f"image {s.get('image') or '-'}, judge code {s.get('judge_code_sha256') or '-'}",
        f"verdict {s.get('verdict', '-')}{CHECK_WORDS if s.get('check') is True else ''}, score "
        f"{_score(s.get('score'))}, on {_gpus(s.get('gpus'))}",
    ]
    same = s.get("same_submission")
    if isinstance(same, dict):
        listed = same.get("evaluations")
        rows = [e for e in listed if isinstance(e, dict)] if isinstance(listed, list) else []
        scores = ", ".join(_score(e.get("score"), short=True) for e in rows)
        lines.append(
            f"evaluations of this submission by this token on this task when it was signed: {same.get('count')} "
            f"({scores})"
        )
    return lines


def _score(value: object, short: bool = False) -> str:
    try:
        score = from_data(Score, value)
    except DataError:
        return "-"
    if short:
        return f"{score.speedup:.4f}x"
    return f"{score.speedup:.4f}x [{score.speedup_lo:.4f}, {score.speedup_hi:.4f}]"


def _gpus(value: object) -> str:
    gpus = [g for g in value if isinstance(g, dict)] if isinstance(value, list) else []
    if not gpus:
        return "no GPU"
    return "; ".join(f"{g.get('name', '?')} {g.get('uuid', '?')} (driver {g.get('driver') or '?'})" for g in gpus)
