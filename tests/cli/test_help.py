"""`kcoral --help` groups the commands, and `kcoral serve --help` its options (no Docker, no server)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from kcoral.cli.commands import COMMANDS, PANELS

ROOT = Path(__file__).resolve().parents[2]
#: the server commands cli.main adds beside the client's (they need the `server` extra)
SERVER_COMMANDS = ("serve", "agent", "images")
NOWHERE = "http://127.0.0.1:9"  # the discard port: nothing listens there on a test machine


def kcoral(*args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "COLUMNS": "200", "KCORAL_REMOTE": NOWHERE, **env}
    environ.pop("KCORAL_TOKEN", None)
    return subprocess.run(
        [sys.executable, "-m", "kcoral", *args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=60
    )


def panels_in(help_text: str) -> dict[str, list[str]]:
    """Each panel of a rich help text with the names (first words) of its rows."""
    panels: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in help_text.splitlines():
        if m := re.match(r"╭─ (.+?) ─", line):
            current = panels.setdefault(m.group(1), [])
        elif line.startswith("╰"):
            current = None
        elif current is not None and (m := re.match(r"│ (\S+)", line)):
            current.append(m.group(1))
    return panels


def test_every_command_is_listed_under_its_group() -> None:
    done = kcoral("--help")
    assert done.returncode == 0, done.stderr
    panels = panels_in(done.stdout)
    assert "Commands" not in panels, "a command without a group lands in typer's default panel"
    listed = {name: panel for panel, names in panels.items() if panel != "Options" for name in names}
    assert set(PANELS) == set(COMMANDS) | set(SERVER_COMMANDS)
    assert listed == PANELS
    for panel in ("Run & evaluate", "Profile", "History & receipts", "Server & hosts", "Tasks"):
        assert panels[panel], panel


def test_serve_lists_its_options_by_group() -> None:
    done = kcoral("serve", "--help")
    assert done.returncode == 0, done.stderr
    panels = panels_in(done.stdout)
    assert panels.pop("Options") == ["--help"]
    assert {"--host", "--tokens-file"} <= set(panels["Listening and access"])
    assert {"--data-dir", "--gpus", "--image"} <= set(panels["Jobs and slots"])
    assert "--ray" in panels["Several GPU hosts"] and "--warm-up" in panels["Evaluations"]
