"""One module per ``kcoral`` command; :mod:`cli.main` registers them. COMMANDS is here, typer-free,
so that :mod:`cli.console` knows a client command before anything heavy is imported."""

#: each command: its module under kcoral.cli.commands, the function (or typer app, for a group), and the
#: name of the module's OPTIONS_METAVAR for commands that pass the rest of their line on. A command's
#: module is imported only when that command runs (or for the list in --help): start-up is paid per
#: command, not for all of them.
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "python": ("python_cmd", "python", True),
    "jobs": ("jobs", "jobs", False),
    "status": ("status", "status", False),
    "logs": ("logs", "logs", False),
    "cancel": ("cancel", "cancel", False),
    "gpus": ("gpus", "gpus", False),
    "ncu": ("ncu_cmd", "ncu", True),
    "iket": ("iket_cmd", "iket", True),
    "eval": ("eval_cmd", "evaluate", False),
    "calibrate": ("calibrate_cmd", "calibrate", False),
    "tasks": ("tasks_cmd", "tasks_app", False),
    "init": ("tasks_cmd", "init", False),
    "show": ("show_cmd", "show", False),
    "rerun": ("rerun_cmd", "rerun", False),
    "history": ("history_cmd", "history", False),
    "compare": ("compare_cmd", "compare", False),
    "best": ("best_cmd", "best", False),
    "verify": ("verify_cmd", "verify", False),
    "wait": ("wait_cmd", "wait", False),
    "download": ("wait_cmd", "download", False),
    "doctor": ("doctor", "doctor", False),
    "mcp": ("mcp_cmd", "mcp", False),
}
CORE_COMMANDS = frozenset(COMMANDS)
