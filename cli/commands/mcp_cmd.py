"""``kcoral mcp``: kcoral's tools for coding agents over the Model Context Protocol (cli.mcp_server)."""

from __future__ import annotations

import importlib.util
from typing import Annotated

import typer

from kcoral.cli.commands.common import RemoteOption, TokenOption
from kcoral.protocol.errors import UsageError
from kcoral.protocol.install import install_hint


def mcp(
    remote: RemoteOption = None,
    token: TokenOption = None,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            help="serve streamable HTTP on this loopback HOST:PORT instead of stdio; every request must carry "
            "'Authorization: Bearer SECRET', a secret made at each start, printed and kept in a file only you can read",
        ),
    ] = None,
) -> None:
    """Serve kcoral's tools to an agent host over MCP (stdio by default): list_tasks, show_task,
    evaluate, check, run_python, job_status, job_log, download_outputs, ncu, iket, sanitizer, timeline, proton,
    cancel."""
    if importlib.util.find_spec("mcp") is None:
        raise UsageError(f"`kcoral mcp` needs the MCP SDK, which is not installed here: {install_hint('mcp')}")
    if not remote:
        raise UsageError("no server given: pass --remote URL or set KCORAL_REMOTE")
    from kcoral.cli.mcp_server import main

    main(remote, token, http)
