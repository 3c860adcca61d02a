"""kcoral: a remote GPU benchmark server and its client.

The repository keeps one folder per part (runner/, cli/, tasks/, profiling/, images/); an install
(pyproject.toml's package-dir, editable or not) names them ``kcoral.runner``, ``kcoral.cli``, ..., so
kcoral adds one top-level name to site-packages.
"""

from typing import Any

__all__ = ["Client", "JobResult", "KcoralError"]
#: the client's and the server's (``kcoral doctor`` compares them); pyproject.toml says the same
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``from kcoral import Client`` (cli.library), imported on first use: the server never pays for it."""
    if name in __all__:
        from kcoral.cli import library

        return getattr(library, name)
    raise AttributeError(f"module 'kcoral' has no attribute {name!r}")
