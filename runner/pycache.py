"""Bytecode of the host's Python for toolchain-mode jobs, compiled once by the server.

On a GPU host whose PyTorch lives on the host (``kcoral serve --host-toolchain``), the packages may
carry no bytecode (installed with ``--no-compile``, or a host that sets PYTHONDONTWRITEBYTECODE),
and a job's root filesystem is read-only: every job process compiled torch's modules from source
again. Measured on the H200 (bench/first_call_probe.py): of a warm first FLA call's 10-13 s, 4.9-6.4 s
were ``compile()`` of 1,752 modules that torch imports lazily, and ``import torch`` took 3.6-6.3 s.

So the server compiles the job interpreter's import path (as a job sees it: the operator's
PYTHONPATH) into a folder of its own in the data dir, as the mirror tree that PYTHONPYCACHEPREFIX
names, and every toolchain job gets that folder read-only at PYCACHE_MOUNT with the variable set.
The bytecode is the server's, made from the host's sources by the host's interpreter; a job can read
it and never write it. Python checks each file against its source's mtime and size, so a package
changed since is compiled in the job (unsaved) until the server's next start compiles it again.
Compiling runs in the background at a low priority; jobs are pointed at the folder once one
compilation of the whole import path has ended (its ``complete`` file).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import threading
import time

from kcoral.runner.settings import PYCACHE_COMPLETE, Settings

log = logging.getLogger("kcoral.pycache")

#: the longest one compilation of the import path may take (a first one compiles all of torch)
COMPILE_TIMEOUT_S = 1800.0
#: the longest the job interpreter may take to say its import path
PATH_TIMEOUT_S = 60.0


def import_path(settings: Settings) -> list[str]:
    """The folders on the job interpreter's sys.path, with the operator's environment (PYTHONPATH)."""
    proc = subprocess.run(
        [settings.python, "-c", "import json, sys; print(json.dumps(sys.path))"],
        env=_environment(settings),
        capture_output=True,
        text=True,
        timeout=PATH_TIMEOUT_S,
        check=True,
    )
    paths: list[str] = json.loads(proc.stdout)
    return [p for p in dict.fromkeys(paths) if p and os.path.isdir(p)]


def _environment(settings: Settings) -> dict[str, str]:
    """The host environment the compiler runs in: its PATH, and the jobs' PYTHONPATH."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    pythonpath = settings.operator_env().get("PYTHONPATH")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


def compile_import_path(settings: Settings) -> str:
    """Compile every module on the job interpreter's import path into ``settings.pycache_dir``;
    a line saying what was done. Files already current are left as they are."""
    dest = settings.pycache_dir
    if dest is None:
        return "not toolchain mode: nothing to compile"
    began = time.monotonic()
    dest = dest.resolve()
    folders = import_path(settings)
    nice = shutil.which("nice")
    proc = subprocess.run(
        [*([nice, "-n", "19"] if nice else []), settings.python, "-m", "compileall", "-q", "-j", "0", *folders],
        # the variable, not -X pycache_prefix: compileall's worker processes (forkserver on Python 3.12)
        # inherit the environment but not -X options, and would write into the packages' own folders
        env={**_environment(settings), "PYTHONPYCACHEPREFIX": str(dest)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        timeout=COMPILE_TIMEOUT_S,
    )
    # a package may hold files that are not Python for this version (templates, tests): compileall
    # names them and goes on; they are compiled (and fail) in a job as they would without this
    failures = sum(line.startswith("***") for line in proc.stdout.splitlines())
    done = (
        f"compiled the job interpreter's import path ({len(folders)} folders) into {dest} in "
        f"{time.monotonic() - began:.1f} s; {failures} file(s) could not be compiled"
    )
    (dest / PYCACHE_COMPLETE).write_text(done + "\n")  # from now on, jobs read it (Settings.operator_env)
    return done


class ToolchainBytecode:
    """The background compilation at the server's start (toolchain mode only)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._thread: threading.Thread | None = None
        self._outcome = ""

    def state(self) -> str:
        """For /v1/health: off (image mode), compiling, or how the compilation ended."""
        if self.settings.pycache_dir is None:
            return "off"
        if self._thread is not None and self._thread.is_alive():
            return "compiling"
        return self._outcome or "not started"

    def start(self) -> None:
        dest = self.settings.pycache_dir
        if dest is None:
            return
        dest.mkdir(parents=True, exist_ok=True)
        dest.chmod(0o755)  # jobs read it as their own uid
        self._thread = threading.Thread(target=self._run, name="kcoral-pycache", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._outcome = compile_import_path(self.settings)
            log.info("%s", self._outcome)
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            self._outcome = f"failed: {exc}"
            log.warning("the toolchain's bytecode was not compiled (jobs compile what they import): %s", exc)
