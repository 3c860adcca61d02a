"""``python -m runner`` = ``kcoral serve``."""

import typer

from runner.serve_command import serve

if __name__ == "__main__":
    typer.run(serve)
