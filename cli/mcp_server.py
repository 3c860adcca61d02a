"""``kcoral mcp``: kcoral as typed tools for coding agents, over the Model Context Protocol.

Built on the protocol's own Python SDK (``mcp``, its MCPServer), which is maintained with the protocol
and also gives the tests their client; every request goes through the same client library as the
command line (cli.library.Client over cli.client.KcoralClient): no second implementation of any call.

Tools return structured results (the server's own models as JSON: a job's view, an evaluation's
report lines); long work reports progress (the job's state and queue position, once a second); logs
come in bounded pages that say what was cut and how to get the rest; a failure is a tool error with
the CLI's message and exit code, never a traceback. Resources: a task's contract
(``kcoral://tasks/{task_id}``, the id whole: ``demo/softmax``, ``kernelbench/level1/19_ReLU``) and a
finished evaluation's report (``kcoral://jobs/{job}/report``).

    kcoral mcp [--remote URL] [--token T]            (stdio; $KCORAL_REMOTE / $KCORAL_TOKEN)
    kcoral mcp --http 127.0.0.1:8931                 (streamable HTTP, loopback only; every request must
                                                      carry this start's secret: cli.mcp_http)
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, cast, get_args

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from pydantic import Field

from kcoral import __version__
from kcoral.cli import mcp_results as results
from kcoral.cli.library import Client, JobResult
from kcoral.cli.mcp_results import (
    LOG_PAGE,
    Downloaded,
    EvaluationOutcome,
    IketOutcome,
    JobOutcome,
    LogPage,
    NcuOutcome,
    ProtonOutcome,
    SanitizerOutcome,
    TimelineOutcome,
)
from kcoral.protocol.errors import KcoralError, UsageError
from kcoral.protocol.evaluations import Board, Comparison, History
from kcoral.protocol.models import JobView
from kcoral.tasks.documents import TaskContract

LOG_PAGE_MAX = 64 << 10

# --- the tools' parameters, each described once ----------------------------------------------------
Task = Annotated[str, Field(description="a task id, e.g. demo/softmax (list_tasks lists them)")]
Directory = Annotated[
    str | None,
    Field(
        description="the folder to send (for evaluate and check: one holding solution.py): a path on the MCP "
        "server's machine, relative to its working folder; or give files instead"
    ),
]
Files = Annotated[
    dict[str, str] | None,
    Field(description="instead of directory: file name -> text, written into a fresh folder that is sent"),
]
TimeoutS = Annotated[
    float | None,
    Field(
        description="seconds the job may run (default: the server's); capped by the server's limit and, for an "
        "evaluation, by the task's time limit"
    ),
]
OutputDir = Annotated[
    str | None,
    Field(
        description="where the job's files come back: a path on the MCP server's machine, relative to its "
        "working folder (default ./kcoral-out/JOB_ID)"
    ),
]
JobId = Annotated[str, Field(description="a job id as a result gave it (a unique piece of one will do)")]
Label = Annotated[
    str,
    Field(
        description="the candidate's name in the task's history (default: the folder's name, or 'submission' for "
        "files, and the start of the sent files' sha256)"
    ),
]
Evaluation = Annotated[
    str, Field(description="an evaluation: its job id (a unique piece of one will do) or its label (the newest)")
]
HistoryLimit = Annotated[int, Field(description="how many of the newest evaluations to list (1-1000)")]
Argv = Annotated[
    list[str],
    Field(
        description="python's arguments: a script of the sent folder and its arguments, "
        "or ['-c', CODE] or ['-m', MODULE, ...]"
    ),
]
Env = Annotated[
    dict[str, str] | None,
    Field(
        description="environment variables for the job: upper-case names of your own, the kernel tools' knobs "
        "(TRITON_*, TORCH_*, ...); the server refuses the rest and says why"
    ),
]
Gpus = Annotated[int, Field(description="GPUs to lease for the job (0: a CPU slot)")]
Offset = Annotated[int, Field(description="the log byte to start from (a previous page's next_offset)")]
Limit = Annotated[int, Field(description=f"bytes of log to return, at most {LOG_PAGE_MAX}")]
Command = Annotated[list[str], Field(description="the command to profile, e.g. ['python', 'capture.py']")]
NcuArgs = Annotated[list[str] | None, Field(description="ncu's own options (default ['--set', 'full'])")]
SanitizerArgs = Annotated[
    list[str] | None,
    Field(
        description="compute-sanitizer's options (default ['--tool', 'memcheck']): --tool memcheck|racecheck|"
        "initcheck|synccheck, --leak-check, --print-limit, ... (others are refused)"
    ),
]
TimelineArgs = Annotated[
    list[str] | None, Field(description="the recorder's options: --record-shapes, --with-stack (default none)")
]
PythonCommand = Annotated[
    list[str],
    Field(description="the Python command to record: ['python', 'bench.py', ...], ['python', '-m', 'MODULE', ...]"),
]
ProtonArgs = Annotated[
    list[str] | None,
    Field(
        description="kcoral proton's options (default none: --data trace): --data trace|tree, --mode default|mma, "
        "--granularity, --buffer-type, --buffer-strategy, --buffer-size, --optimizations (others are refused)"
    ),
]
IketArgs = Annotated[
    list[str] | None, Field(description="run-iket's words before the command (default profile --postprocess all)")
]


def build(remote: str | None, token: str | None) -> MCPServer:
    """The MCP server, its tools and resources bound to one kcoral server."""
    server = MCPServer(
        "kcoral",
        version=__version__,
        instructions=(
            "kcoral runs Python and evaluates GPU kernels on a remote benchmark server. Read a task's "
            "contract (show_task), check a candidate's correctness (check), then score it (evaluate). "
            "Every job's files come back into a local folder whose path the result gives."
        ),
        # warnings and errors only: at INFO the SDK logs every request it serves, and httpx every call
        # to the kcoral server, on the agent's stderr ($KCORAL_MCP_LOG_LEVEL=INFO shows them)
        log_level=_log_level(),
    )
    KcoralTools(Client(remote, token)).register(server)
    return server


LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


def _log_level() -> LogLevel:
    """$KCORAL_MCP_LOG_LEVEL (default WARNING), or a usage error naming the levels."""
    level = os.environ.get("KCORAL_MCP_LOG_LEVEL", "WARNING").upper()
    if level not in get_args(LogLevel):
        raise UsageError(f"KCORAL_MCP_LOG_LEVEL must be one of {', '.join(get_args(LogLevel))}, not {level!r}")
    return cast(LogLevel, level)


class KcoralTools:
    """kcoral's MCP tools and resources over one library client: each is a method (its name the tool's,
    its docstring the tool's description, its parameters the tool's), registered by :meth:`register`."""

    #: the methods that are tools, in the order an agent lists them
    TOOLS = (
        "list_tasks",
        "show_task",
        "evaluate",
        "check",
        "run_python",
        "job_status",
        "job_log",
        "download_outputs",
        "cancel",
        "history",
        "compare",
        "best",
        "ncu",
        "iket",
        "sanitizer",
        "timeline",
        "proton",
    )
    #: the methods that are resources, by URI template
    RESOURCES = {
        # RFC 6570's reserved expansion: the id's slashes kept (a problem pack's ids have three parts)
        "kcoral://tasks/{+task_id}": "task_contract",
        "kcoral://jobs/{job_id}/report": "job_report",
    }

    def __init__(self, client: Client) -> None:
        self.client = client

    def register(self, server: MCPServer) -> None:
        for name in self.TOOLS:
            server.tool()(getattr(self, name))
        for uri, name in self.RESOURCES.items():
            server.resource(uri, mime_type="application/json")(getattr(self, name))

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A blocking library call on a worker thread; its KcoralError as a tool error."""
        try:
            return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
        except KcoralError as err:
            hint = f" ({err.hint})" if getattr(err, "hint", "") else ""
            raise ToolError(f"{err.message}{hint} [exit code {err.exit_code}]") from None

    async def follow(self, submitted: JobView, ctx: Context | None, output_dir: str | None) -> JobResult:
        """Follow the job to its end (the log stream with its status frames: no polling, no delay),
        telling the client each state and queue position as progress; then its result."""
        began = time.monotonic()

        async def progress(view: JobView) -> None:
            if ctx is not None:
                where = f" (queue position {view.queue_position})" if view.queue_position else ""
                waits = f"; cannot start yet: {view.waiting}" if view.waiting else ""
                message = f"job {view.id}: {view.state}{where}{waits}"
                await ctx.report_progress(round(time.monotonic() - began, 1), None, message)

        def watch() -> None:
            for _ in self.client.http.follow_log(
                submitted.id, 0, follow=True, on_status=lambda v: anyio.from_thread.run(progress, v)
            ):
                pass

        await self.call(watch)
        return await self.call(self.client.result, submitted.id, output_dir)

    # --- tasks ----------------------------------------------------------------------------------

    async def list_tasks(self) -> list[dict[str, Any]]:
        """The evaluation tasks this server has (id, device, workloads, description)."""
        return list(await self.call(self.client.tasks))

    async def show_task(self, task: Task) -> TaskContract:
        """A task's whole contract: each public workload's inputs and outputs, tolerances, how the score
        is timed, the time limit, the image's packages and the template to start from."""
        return await self.call(self.client.task, task)

    # --- evaluations ----------------------------------------------------------------------------

    async def evaluate(
        self,
        task: Task,
        directory: Directory = None,
        files: Files = None,
        timeout_s: TimeoutS = None,
        output_dir: OutputDir = None,
        label: Label = "",
        ctx: Context | None = None,
    ) -> EvaluationOutcome:
        """The official score of a submission: ``directory`` (a folder with solution.py, a GPU MODE
        problem's submission.py) or ``files`` (file name -> text). Returns the verdict, each workload's
        line, the speedup with its 95% interval, the first failure's reason, and the job id."""
        return await self._evaluate(task, directory, files, timeout_s, False, output_dir, label, ctx)

    async def check(
        self,
        task: Task,
        directory: Directory = None,
        files: Files = None,
        output_dir: OutputDir = None,
        label: Label = "",
        ctx: Context | None = None,
    ) -> EvaluationOutcome:
        """The fast correctness mode: the public workloads only, with full tracebacks, no timing, no
        holdout, no score (seconds, not minutes). Same arguments and result as evaluate."""
        return await self._evaluate(task, directory, files, None, True, output_dir, label, ctx)

    async def _evaluate(
        self,
        task: str,
        directory: str | None,
        files: dict[str, str] | None,
        timeout_s: float | None,
        checking: bool,
        output_dir: str | None,
        label: str,
        ctx: Context | None,
    ) -> EvaluationOutcome:
        if not directory and not files:
            raise ToolError(
                "give the submission: directory (a folder holding solution.py, a GPU MODE problem's submission.py, a "
                "path on the MCP server's machine, relative to its working folder) or files (file name -> text, e.g. "
                "{'solution.py': '...'})"
            )
        with _sent(directory, files) as folder:
            view = await self.call(self.client.evaluate, task, folder, timeout_s, checking, output_dir, False, label)
        return results.evaluation(await self.follow(view, ctx, output_dir))

    # --- jobs -----------------------------------------------------------------------------------

    async def run_python(
        self,
        argv: Argv,
        directory: Directory = None,
        files: Files = None,
        env: Env = None,
        timeout_s: TimeoutS = None,
        gpus: Gpus = 1,
        output_dir: OutputDir = None,
        ctx: Context | None = None,
    ) -> JobOutcome:
        """``python ARGV...`` on a leased GPU next to ``directory``'s files (or ``files``: name -> text).
        Returns the exit code, the verdict, the log's tail (and how to page the rest), the outputs."""
        with _sent(directory, files) as folder:
            view = await self.call(self.client.run, argv, folder, env, timeout_s, gpus, output_dir, False)
        return JobOutcome(**results.job_outcome(await self.follow(view, ctx, output_dir)))

    async def job_status(self, job_id: JobId) -> JobView:
        """A job's view: state, verdict, exit code, reason, queue position, image, times, outputs."""
        return await self.call(self.client.status, job_id)

    async def job_log(self, job_id: JobId, offset: Offset = 0, limit: Limit = LOG_PAGE) -> LogPage:
        """A page of a job's log (stdout and stderr in order): ``limit`` bytes (at most 64 KiB) from
        ``offset``; ``next_offset`` continues it, ``more`` says whether there is more."""
        if offset < 0 or limit < 1:
            raise ToolError("offset must be 0 or more and limit 1 or more")
        limit = min(limit, LOG_PAGE_MAX)
        view = await self.call(self.client.status, job_id)

        def first_bytes() -> bytes:  # the log is read from offset up to limit, not to its end
            got = bytearray()
            for piece in self.client.http.follow_log(view.id, offset, follow=False):
                got += piece.data
                if len(got) >= limit:
                    break
            return bytes(got[:limit])

        page = await self.call(first_bytes)
        return LogPage(
            job_id=view.id,
            offset=offset,
            text=page.decode(errors="replace"),
            next_offset=offset + len(page),
            total_bytes=view.log_bytes,
            more=offset + len(page) < view.log_bytes,
        )

    async def download_outputs(self, job_id: JobId, output_dir: OutputDir = None) -> Downloaded:
        """Download a job's output files into ``output_dir`` (default ./kcoral-out/JOB_ID); their paths."""
        found = await self.call(self.client.download, job_id, output_dir)
        return Downloaded(job_id=job_id, files=[str(p) for p in found])

    async def cancel(self, job_id: JobId) -> JobView:
        """Cancel a queued or running job; its view afterwards."""
        return await self.call(self.client.cancel, job_id)

    # --- the candidates of a task -----------------------------------------------------------------

    async def history(self, task: Task, limit: HistoryLimit = 20) -> History:
        """Your newest evaluations of ``task``, newest first: label, submission digest, verdict, speedup
        with its 95% interval, GPU, time; the best so far marked (the highest speedup of a passing
        timed evaluation; checks and failed or inconclusive ones never count)."""
        if not 1 <= limit <= 1000:
            raise ToolError("limit must be 1 to 1000")
        return await self.call(self.client.history, task, limit)

    async def compare(self, a: Evaluation, b: Evaluation) -> Comparison:
        """Evaluation ``b`` against ``a``: per workload both speedups with their intervals and B against A
        as faster / slower / same / ambiguous (decided from the intervals, never from the point values),
        whether the submissions are identical, and the unified diff of their sources."""
        return await self.call(self.client.compare, a, b)

    async def best(self, task: Task) -> Board:
        """The best evaluation so far of each token on ``task`` that you may see (your own, and the
        others' anonymised ranks where the server shows its board), with their receipts."""
        return await self.call(self.client.best, task)

    # --- profilers ------------------------------------------------------------------------------

    async def profiled(
        self,
        submit: Callable[..., Any],
        command: list[str],
        args: list[str],
        directory: str | None,
        files: dict[str, str] | None,
        output_dir: str | None,
        ctx: Context | None,
    ) -> JobResult:
        with _sent(directory, files) as folder:
            view = await self.call(submit, command, args, folder, None, None, output_dir, False)
        return await self.follow(view, ctx, output_dir)

    async def ncu(
        self,
        command: Command,
        ncu_args: NcuArgs = None,
        directory: Directory = None,
        files: Files = None,
        output_dir: OutputDir = None,
        ctx: Context | None = None,
    ) -> NcuOutcome:
        """Profile ``command`` with Nsight Compute (``ncu_args``: ncu's options, default --set full).
        Returns the per-kernel summary and the local path of the .ncu-rep report."""
        done = await self.profiled(
            self.client.ncu, command, ncu_args or ["--set", "full"], directory, files, output_dir, ctx
        )
        return results.ncu(done)

    async def iket(
        self,
        command: Command,
        iket_args: IketArgs = None,
        directory: Directory = None,
        files: Files = None,
        output_dir: OutputDir = None,
        ctx: Context | None = None,
    ) -> IketOutcome:
        """Trace ``command`` with IKET (``iket_args``: run-iket's words, default profile --postprocess all).
        Returns the trace summary and the local paths of the trace files."""
        args = iket_args or ["profile", "--postprocess", "all"]
        return results.iket(await self.profiled(self.client.iket, command, args, directory, files, output_dir, ctx))

    async def sanitizer(
        self,
        command: Command,
        sanitizer_args: SanitizerArgs = None,
        directory: Directory = None,
        files: Files = None,
        output_dir: OutputDir = None,
        ctx: Context | None = None,
    ) -> SanitizerOutcome:
        """Check ``command`` with compute-sanitizer (memcheck by default: out-of-bounds and misaligned
        accesses; racecheck: shared-memory races; initcheck: uninitialised reads; synccheck: barriers).
        Returns the errors grouped by kernel and kind, and the local paths of the reports."""
        args = sanitizer_args or ["--tool", "memcheck"]
        done = await self.profiled(self.client.sanitizer, command, args, directory, files, output_dir, ctx)
        return results.sanitizer(done)

    async def timeline(
        self,
        command: PythonCommand,
        timeline_args: TimelineArgs = None,
        directory: Directory = None,
        files: Files = None,
        output_dir: OutputDir = None,
        ctx: Context | None = None,
    ) -> TimelineOutcome:
        """Record a Python ``command``'s GPU activity (torch.profiler through CUPTI): kernels, copies,
        syncs per stream with the launching thread. Returns the summary (top kernels, the gaps between
        kernels per stream, copies, syncs) and the local path of the Chrome trace."""
        args = timeline_args or []
        done = await self.profiled(self.client.timeline, command, args, directory, files, output_dir, ctx)
        return results.timeline(done)

    async def proton(
        self,
        command: PythonCommand,
        proton_args: ProtonArgs = None,
        directory: Directory = None,
        files: Files = None,
        output_dir: OutputDir = None,
        ctx: Context | None = None,
    ) -> ProtonOutcome:
        """Profile the scopes that ``command``'s Triton kernels mark with Proton's language (``command``:
        ['python', 'SCRIPT.py', ...]; in the kernel ``import triton.profiler.language as pl`` and
        ``pl.enter_scope("name")`` / ``pl.exit_scope("name")``; the server starts and finalizes Proton).
        Returns per scope count/min/median/max in SM clock cycles and the local path of the trace."""
        done = await self.profiled(self.client.proton, command, proton_args or [], directory, files, output_dir, ctx)
        return results.proton(done)

    # --- resources ------------------------------------------------------------------------------

    async def task_contract(self, task_id: str) -> str:
        """A task's contract (as show_task): ``demo/softmax``, a problem pack's ``gpumode/PACK/PROBLEM``."""
        try:
            return json.dumps((await self.call(self.client.task, task_id)).document())
        except ToolError as err:
            raise ResourceNotFoundError(str(err)) from None

    async def job_report(self, job_id: str) -> str:
        """A finished evaluation's report (report.json, as its server wrote it: no other job's file of
        that name is one)."""
        try:
            report = await self.call(self.client.report, job_id)
        except ToolError as err:
            raise ResourceNotFoundError(str(err)) from None
        if report is None:
            raise ResourceNotFoundError(f"job {job_id} has no report (not an evaluation, or not finished)")
        return json.dumps(report.document())


class _sent:
    """The folder to send: ``directory``, or ``files`` written into a temporary one (removed after),
    or nothing at all."""

    def __init__(self, directory: str | None, files: Mapping[str, str] | None) -> None:
        if directory and files:
            raise ToolError("give directory or files, not both")
        self.directory, self.files = directory, files
        self._scratch: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> str | None:
        if self.files is None:
            return self.directory
        self._scratch = tempfile.TemporaryDirectory(prefix="kcoral-mcp-")
        root = Path(self._scratch.name) / "submission"  # the default label's name (cli.runflow.labelled)
        root.mkdir()
        for name, text in self.files.items():
            target = (root / name).resolve()
            if root.resolve() not in target.parents:
                raise ToolError(f"file name {name!r} leaves the submission's folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        return str(root)

    def __exit__(self, *exc: object) -> None:
        if self._scratch is not None:
            self._scratch.cleanup()


def main(remote: str | None, token: str | None, http: str | None = None) -> None:
    """Serve on stdio (or streamable HTTP on a loopback ``HOST:PORT``, behind a secret of this start's)
    until the client leaves."""
    try:
        server = build(remote, token)
    except UsageError as err:
        raise SystemExit(f"kcoral mcp: {err.message}") from None
    if http is None:
        anyio.run(_serve_stdio, server)
        return
    host, _, port = http.rpartition(":")
    if host not in ("127.0.0.1", "localhost", "::1") or not port.isdigit() or not 0 < int(port) < 65536:
        raise SystemExit("kcoral mcp: --http takes a loopback HOST:PORT, e.g. 127.0.0.1:8931")
    from kcoral.cli.mcp_http import serve  # every request must carry this start's secret (cli.mcp_http)

    serve(server, host, int(port))


async def _serve_stdio(server: MCPServer) -> None:
    """``server.run("stdio")``, but a line that is not a JSON-RPC message (not JSON, not UTF-8, a lone
    surrogate, not a message) is answered with JSON-RPC's parse error (-32700, id null): the SDK's stdio
    transport hands such a line to the session as an exception, which drops it, and the client waits."""
    from mcp import types
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, as it does
    async with stdio_server() as (read_stream, write_stream):
        sifted_send, sifted_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def sift() -> None:
            async with sifted_send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        why = (str(item).splitlines() or ["not a JSON-RPC message"])[0][:200]
                        error = types.ErrorData(code=types.PARSE_ERROR, message=f"Parse error: {why}")
                        await write_stream.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=error)))
                    else:
                        await sifted_send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(sift)
            await lowlevel.run(sifted_recv, write_stream, lowlevel.create_initialization_options())
            tg.cancel_scope.cancel()
