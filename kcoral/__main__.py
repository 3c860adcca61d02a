"""``python -m kcoral ...`` = ``kcoral ...`` (the console script)."""

from kcoral.cli.console import main

if __name__ == "__main__":
    main()
