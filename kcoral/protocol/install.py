"""How to add one of kcoral's extras, said the same way by every command that needs one: from a kcoral
checkout. The distribution (kcoral-bench) is not on the public package index, and the name ``kcoral``
there is another project (the KCoral engine): no message may tell anyone to install either from it."""

from __future__ import annotations


def install_hint(extra: str = "") -> str:
    """The command that adds ``extra`` (none: kcoral itself), run in a kcoral checkout."""
    what = f".[{extra}]" if extra else "."
    return f"pip install -e '{what}' in a kcoral checkout"
