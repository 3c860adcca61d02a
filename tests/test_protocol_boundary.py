"""The client and the server share one protocol package and nothing else of each other: kcoral.protocol
imports no other part of kcoral, and the client (cli/) imports nothing of the server (kcoral.runner)
but the server's own commands, which `kcoral serve`/`kcoral agent` register where the server is
installed. Read from the source (every import, at any depth, lazy ones too)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: what cli/ may import of kcoral.runner: the server's commands, registered by cli.main
SERVER_COMMANDS = {("main.py", "kcoral.runner.cluster.agent_command"), ("main.py", "kcoral.runner.serve_command")}


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names; ``from X import y`` counts X and X.y)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_protocol_imports_no_other_part_of_kcoral() -> None:
    modules = sorted((ROOT / "kcoral" / "protocol").glob("*.py"))
    assert len(modules) >= 7
    for path in modules:
        outside = {m for m in imports(path) if m.startswith("kcoral") and not m.startswith("kcoral.protocol")}
        assert outside == set(), (path.name, outside)


def test_the_client_imports_nothing_of_the_server_but_its_commands() -> None:
    cli = ROOT / "cli"
    seen = set()
    for path in sorted(cli.rglob("*.py")):
        for module in imports(path):
            if module == "kcoral.runner" or module.startswith("kcoral.runner."):
                seen.add((str(path.relative_to(cli)), module))
    # `from kcoral.runner.serve_command import serve` counts the module and the name
    assert {(f, m) for f, m in seen if (f, m.rsplit(".", 1)[0]) not in SERVER_COMMANDS} == SERVER_COMMANDS


def test_the_protocol_and_the_client_import_without_the_server(tmp_path: Path) -> None:
    """In a fresh interpreter, importing the whole protocol and the client's library loads no module
    of kcoral.runner."""
    import subprocess
    import sys

    code = (
        "import sys, pkgutil, importlib, kcoral.protocol as p\n"
        "for m in pkgutil.iter_modules(p.__path__): importlib.import_module('kcoral.protocol.' + m.name)\n"
        "import kcoral.cli.client, kcoral.cli.library, kcoral.cli.output\n"
        "print(sorted(m for m in sys.modules if m.startswith('kcoral.runner')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
