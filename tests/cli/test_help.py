"""`kcoral --help` groups the commands; README's first screen and the examples at the end of `kcoral --help`
hold only command lines that work.

No Docker and no server: a README line is run against an address where nothing listens, and must get
as far as asking it (exit 69: every option parsed, every local check passed)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kcoral.cli.commands import COMMANDS, PANELS
from kcoral.cli.main import EXAMPLES
from kcoral.protocol.errors import EXIT_UNREACHABLE

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


def first_screen() -> list[str]:
    """README's command lines from its start to its first link to docs/: what a newcomer runs first."""
    text = (ROOT / "README.md").read_text()
    screen = text[: text.index("](docs/")]
    return [line.strip() for line in screen.splitlines() if line.startswith("    ")]


def test_the_first_screen_is_short_and_has_the_five_commands() -> None:
    lines = first_screen()
    split = [words(line) for line in lines]
    assert ["bash", "scripts/demo.sh"] in split and ["bash", "scripts/test.sh"] in split
    commands = {w[1] for w in split if w and w[0] == "kcoral"}
    assert {"serve", "python", "eval", "ncu", "iket"} <= commands, commands
    text = (ROOT / "README.md").read_text()
    assert text[: text.index("](docs/")].count("\n") <= 30


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder as a reader's checkout is when they reach those lines: the examples, and a submission
    (`kcoral init` would have written it)."""
    folder = tmp_path_factory.mktemp("reader")
    shutil.copytree(ROOT / "examples", folder / "examples")
    (folder / "sub").mkdir()
    (folder / "sub" / "solution.py").write_text("def set_up(data):\n    pass\n")
    return folder


def words(line: str) -> list[str]:
    """A shell line's words up to its first operator (a redirection, `&`, `|`...), comments dropped."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    out = []
    for word in lexer:
        if set(word) <= set("();<>|&"):
            break
        out.append(word)
    return out


def help_examples() -> list[str]:
    """The example lines that end `kcoral --help`."""
    return [line.strip() for line in EXAMPLES.splitlines() if line.startswith("  kcoral ")]


@pytest.mark.parametrize("line", [line for line in first_screen() if line.startswith("kcoral ")] + help_examples())
def test_each_command_of_the_first_screen_runs_as_written(line: str, reader: Path) -> None:
    args = words(line)[1:]
    if args[0] in SERVER_COMMANDS:  # not started here: its options must parse (--help is answered after that)
        done = kcoral(*args, "--help", cwd=reader)
        assert done.returncode == 0, done.stdout + done.stderr
        return
    done = kcoral(*args, cwd=reader)
    assert done.returncode == EXIT_UNREACHABLE and "cannot reach" in done.stderr, (done.returncode, done.stderr)


def test_every_link_to_a_doc_page_leads_to_one() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).is_file(), f"{page.name} links {target}"
    linked = set(re.findall(r"\]\(docs/([^)]+\.md)\)", (ROOT / "README.md").read_text()))
    assert linked == {p.name for p in pages[1:]}, "README's table of contents names every page of docs/"
