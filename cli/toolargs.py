"""The command line of a profiler command (``kcoral ncu``, ``kcoral sanitizer``, ``kcoral proton``): kcoral's
own options, the tool's options (each checked by the tool's module before anything is sent) and the command
after ``--``; :func:`run_profiler` submits the job and follows it.

typer stops at the first word it does not know, so what it leaves over may still hold kcoral's own
options after a tool option: :func:`split_tool_args` takes both kinds from it, :func:`common_options`
resolves kcoral's own (the last one given wins, over what typer parsed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kcoral.cli.durations import parse_duration
from kcoral.protocol.errors import UsageError

if TYPE_CHECKING:
    from kcoral.cli.runflow import PythonRun
    from kcoral.protocol.models import SpecBase

#: kcoral's options that every profiler command takes: name -> takes a value
COMMON_OWN_OPTIONS: dict[str, bool] = {
    "--send": True,
    "-e": True,
    "--env": True,
    "--timeout": True,
    "--gpus": True,
    "--gpu-type": True,
    "--remote": True,
    "-r": True,
    "--token": True,
    "--json": False,
}

#: how a tool's module reads one of its options: (words, index) -> (normalised words, next index); raises
#: the tool's option error (a ValueError) when it refuses it
TakeOption = Callable[[list[str], int], tuple[list[str], int]]


@dataclass
class ToolArgs:
    #: the tool's options, normalised by its module
    tool: list[str] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    own: dict[str, list[str]] = field(default_factory=dict)

    def last(self, *names: str) -> str | None:
        values = [v for n in names for v in self.own.get(n, [])]
        return values[-1] if values else None

    def flag(self, *names: str) -> bool:
        return any(n in self.own for n in names)


def split_tool_args(args: list[str], own_options: dict[str, bool], take: TakeOption) -> ToolArgs:
    """Split what typer left over into the tool's options, kcoral's and the command (UsageError when bad)."""
    out = ToolArgs()
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            out.command = args[i + 1 :]
            break
        if not word.startswith("-") or word == "-":
            out.command = args[i:]
            break
        name, sep, inline = word.partition("=")
        if name in own_options:
            if own_options[name]:
                if sep:
                    value, i = inline, i + 1
                elif i + 1 < len(args):
                    value, i = args[i + 1], i + 2
                else:
                    raise UsageError(f"option {name} needs a value")
                out.own.setdefault(name, []).append(value)
            else:
                out.own.setdefault(name, [])
                i += 1
            continue
        try:
            words, i = take(args, i)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        out.tool.extend(words)
    return out


#: kcoral's own options of a profiler command whose files go into --output-dir (sanitizer, proton)
OUTPUT_OWN_OPTIONS: dict[str, bool] = {**COMMON_OWN_OPTIONS, "--output-dir": True, "-o": True}


def split_long_options(args: list[str], take_option: Callable[[list[str], int], tuple[str, str, int]]) -> ToolArgs:
    """:func:`split_tool_args` for a tool whose module reads one option as ``(long name, value, next index)``:
    its options become ``--long=value`` words; kcoral's are :data:`OUTPUT_OWN_OPTIONS`."""

    def take(words: list[str], i: int) -> tuple[list[str], int]:
        name, value, nxt = take_option(words, i)
        return [f"{name}={value}"], nxt

    return split_tool_args(args, OUTPUT_OWN_OPTIONS, take)


@dataclass
class CommonOptions:
    """kcoral's options of a profiler command, resolved."""

    send: Path
    env: list[str]
    timeout: float | None
    gpus: int
    gpu_type: str
    json: bool
    remote: str | None
    token: str | None


def _duration(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise UsageError(f"--timeout: {exc}") from None


def _gpus(value: str | None, default: int) -> int:
    if value is None:
        return default
    try:
        return int(float(value) or default)
    except ValueError:
        raise UsageError(f"--gpus takes a number, not {value!r}") from None


def common_options(parsed: ToolArgs, typed: CommonOptions) -> CommonOptions:
    """``typed`` (what typer parsed) with what came after a tool option in ``parsed`` over it."""
    return CommonOptions(
        send=Path(parsed.last("--send") or typed.send),
        env=[*typed.env, *parsed.own.get("-e", []), *parsed.own.get("--env", [])],
        timeout=_duration(parsed.last("--timeout")) or typed.timeout,
        gpus=_gpus(parsed.last("--gpus"), typed.gpus),
        gpu_type=parsed.last("--gpu-type") or typed.gpu_type,
        json=typed.json or parsed.flag("--json"),
        remote=parsed.last("--remote", "-r") or typed.remote,
        token=parsed.last("--token") or typed.token,
    )


#: how a command turns its parsed words and kcoral's resolved options into the job's spec (UsageError if bad)
BuildSpec = Callable[[ToolArgs, CommonOptions], "SpecBase"]


def run_profiler(
    parsed: ToolArgs, typed: CommonOptions, output_dir: Path | None, build: BuildSpec, flow: type[PythonRun]
) -> int:
    """Resolve kcoral's options (``-o``/``--output-dir`` after a tool option included), build the spec, check
    the folder to send, then run ``flow`` (``kcoral python``'s, with the command's follow-up); its exit code."""
    from kcoral.cli.commands.common import connect
    from kcoral.cli.runflow import RunOptions

    opts = common_options(parsed, typed)
    chosen = parsed.last("--output-dir", "-o")
    spec = build(parsed, opts)
    if not opts.send.is_dir():
        raise UsageError(f"--send {opts.send}: not a directory")
    options = RunOptions(
        spec=spec, send_dir=opts.send, output_dir=Path(chosen) if chosen else output_dir, json=opts.json
    )
    with connect(opts.remote, opts.token) as client:
        return flow(client, options).run()


def tool_spec(kind: str, normalise: Callable[[list[str]], list[str]], check: Callable[[list[str]], None]) -> BuildSpec:
    """:func:`run_profiler`'s spec builder for a tool job of ``kind`` (sanitizer, timeline, proton): the
    tool's options normalised, its command checked (either refused: a usage error, one line), the GPUs."""

    def build(parsed: ToolArgs, opts: CommonOptions) -> SpecBase:
        from kcoral.cli.commands.common import job_spec
        from kcoral.profiling.toolargs import ToolOptionError

        try:
            options = normalise(parsed.tool)
            check(parsed.command)
        except ToolOptionError as exc:
            raise UsageError(str(exc)) from None
        fields = {"kind": kind, "argv": options, "command": parsed.command, "gpus": opts.gpus,
                  "gpu_type": opts.gpu_type}  # fmt: skip
        return job_spec(fields, opts.env, opts.timeout)

    return build
