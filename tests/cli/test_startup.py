"""A command imports what it needs and no more: start-up is paid per command (issue 12)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import contextlib, io, json, os, sys
from kcoral.cli.console import main
sys.argv[0] = "kcoral"
real_stdout, real_exit = sys.stdout, os._exit

def exit_now(code):  # the command's end, as the console script has it: the modules it loaded
    real_stdout.write(json.dumps(sorted(m for m, module in sys.modules.items() if module is not None)) + "\\n")
    real_stdout.flush()
    real_exit(0)

os._exit = exit_now
with contextlib.redirect_stdout(io.TextIOWrapper(io.BytesIO())):
    main()
"""

#: never needed to start a client command: the server side, the task documents, torch
HEAVY = ("fastapi", "uvicorn", "docker", "starlette", "kcoral.tasks.documents", "kcoral.tasks.harness", "torch")


def loaded(*argv: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


NOWHERE = "http://127.0.0.1:9"  # nothing answers: the command runs as far as its first request


@pytest.mark.parametrize(
    "argv",
    [
        ["python", "--remote", NOWHERE, "-c", "pass"],
        ["status", "--remote", NOWHERE, "job"],
        ["logs", "--remote", NOWHERE, "job"],
        ["wait", "--remote", NOWHERE, "job"],
        ["jobs", "--remote", NOWHERE],
    ],
)
def test_a_command_loads_only_its_own_module(argv: list[str]) -> None:
    modules = loaded(*argv)
    commands = {m for m in modules if m.startswith("kcoral.cli.commands.") and m != "kcoral.cli.commands.common"}
    assert len(commands) == 1, commands
    assert not [m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY)]
    assert not modules & {"trio", "anyio", "httpx._main", "click"}  # the HTTP client's unused parts
    # a job's data is protocol.models' dataclasses and its lines plain text: no validation library, no
    # terminal toolkit (typer 0.29 would bring pydantic back: pyproject.toml pins it below)
    assert not [m for m in modules if m.split(".")[0] in ("pydantic", "pydantic_core", "rich")]


def test_a_plain_http_client_loads_no_certificates_and_https_still_verifies() -> None:
    import ssl

    from kcoral.cli.client import KcoralClient

    with KcoralClient("https://kcoral.example") as client:
        context = client._http._transport._pool._ssl_context  # type: ignore[attr-defined]
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    with KcoralClient("http://127.0.0.1:9") as client:
        assert client._http.follow_redirects is False  # nothing can lead it to a TLS host unverified


def test_the_help_lists_every_command() -> None:
    from kcoral.cli.main import COMMANDS

    out = subprocess.run([sys.executable, "-m", "kcoral", "--help"], capture_output=True, text=True).stdout
    assert all(name in out for name in COMMANDS) and "serve" in out


def test_the_version_loads_no_command() -> None:
    """``kcoral --version`` (what an agent asks first) answers without any command's module."""
    from kcoral.cli.main import VERSION

    probe = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: sys.__stderr__.write(json.dumps([m for m, v in sys.modules.items() if v]) + '\\n'))\n"
        "from kcoral.cli.console import main\n"
        "sys.argv[0] = 'kcoral'\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == f"kcoral {VERSION}", done
    modules = set(json.loads(done.stderr.splitlines()[-1]))
    commands = {m for m in modules if m.startswith("kcoral.cli.commands.")} - {"kcoral.cli.commands.common"}
    assert not commands and not [m for m in modules if m.startswith(HEAVY)]


def test_a_client_commands_start_up_collects_no_garbage() -> None:
    """Its start-up allocates what lives to its end: the collector stays out of it (cli.console)."""
    probe = (
        "import gc, json, os, sys\n"
        "from kcoral.cli.console import main\n"
        "runs = []\n"
        "gc.callbacks.append(lambda phase, info: phase == 'stop' and runs.append(info['generation']))\n"
        "real_exit = os._exit\n"
        "def exit_now(code):\n"
        "    sys.__stdout__.write(json.dumps(runs) + '\\n')\n"
        "    sys.__stdout__.flush()\n"
        "    real_exit(0)\n"
        "os._exit = exit_now\n"
        "sys.argv[0] = 'kcoral'\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, "python", "--remote", NOWHERE, "-c", "pass"], capture_output=True, text=True
    )
    assert json.loads(done.stdout.splitlines()[-1]) == [], done


def test_ctrl_c_while_the_command_loads_is_an_interruption_not_a_traceback() -> None:
    """The interrupt lands while typer is imported (the first import of kcoral.cli.main fails with it)."""
    probe = (
        "import sys\n"
        "class Interrupting:\n"
        "    hit = False\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'typer' and not self.hit:\n"
        "            self.hit = True\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupting())\n"
        "from kcoral.cli.console import main\n"
        "sys.argv[0] = 'kcoral'\n"
        "main()\n"
    )
    argv = ["python", "--json", "--remote", NOWHERE, "-c", "pass"]
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True)
    assert done.returncode == 130 and "Traceback" not in done.stderr, done
    assert json.loads(done.stdout)["error"]["type"] == "Interrupted"
