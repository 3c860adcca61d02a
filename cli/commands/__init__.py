"""One module per ``kcoral`` command; :mod:`cli.main` registers them. COMMANDS is here, typer-free,
so that :mod:`cli.console` knows a client command before anything heavy is imported."""

#: each command: its module under kcoral.cli.commands, the function (or typer app, for a group), and the
#: name of the module's OPTIONS_METAVAR for commands that pass the rest of their line on. A command's
#: module is imported only when that command runs (or for the list in --help): start-up is paid per
#: command, not for all of them. The order is the one `kcoral --help` lists them in, panel by panel.
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "python": ("python_cmd", "python", True),
    "eval": ("eval_cmd", "evaluate", False),
    "rerun": ("rerun_cmd", "rerun", False),
    "calibrate": ("calibrate_cmd", "calibrate", False),
    "tasks": ("tasks_cmd", "tasks_app", False),
    "init": ("tasks_cmd", "init", False),
    "ncu": ("ncu_cmd", "ncu", True),
    "iket": ("iket_cmd", "iket", True),
    "sanitizer": ("sanitizer_cmd", "sanitizer", True),
    "timeline": ("timeline_cmd", "timeline", True),
    "proton": ("proton_cmd", "proton", True),
    "jobs": ("jobs", "jobs", False),
    "status": ("status", "status", False),
    "logs": ("logs", "logs", False),
    "wait": ("wait_cmd", "wait", False),
    "download": ("wait_cmd", "download", False),
    "cancel": ("cancel", "cancel", False),
    "history": ("history_cmd", "history", False),
    "compare": ("compare_cmd", "compare", False),
    "best": ("best_cmd", "best", False),
    "show": ("show_cmd", "show", False),
    "verify": ("verify_cmd", "verify", False),
    "gpus": ("gpus", "gpus", False),
    "doctor": ("doctor", "doctor", False),
    "mcp": ("mcp_cmd", "mcp", False),
}
CORE_COMMANDS = frozenset(COMMANDS)

RUN = "Run & evaluate"
TASKS = "Tasks"
PROFILE = "Profile"
JOBS = "Jobs"
HISTORY = "History & receipts"
SERVER = "Server & hosts"
AGENTS = "Coding agents"

#: the panel each command is listed under in `kcoral --help`, the server's commands (`serve`, `agent`,
#: `images`: cli.main's optional ones) included; tests/cli/test_help.py checks that none lacks one
PANELS: dict[str, str] = {
    "python": RUN,
    "eval": RUN,
    "rerun": RUN,
    "calibrate": RUN,
    "tasks": TASKS,
    "init": TASKS,
    "ncu": PROFILE,
    "iket": PROFILE,
    "sanitizer": PROFILE,
    "timeline": PROFILE,
    "proton": PROFILE,
    "jobs": JOBS,
    "status": JOBS,
    "logs": JOBS,
    "wait": JOBS,
    "download": JOBS,
    "cancel": JOBS,
    "history": HISTORY,
    "compare": HISTORY,
    "best": HISTORY,
    "show": HISTORY,
    "verify": HISTORY,
    "serve": SERVER,
    "agent": SERVER,
    "images": SERVER,
    "gpus": SERVER,
    "doctor": SERVER,
    "mcp": AGENTS,
}
