"""One module per ``kcoral`` command; :mod:`cli.main` registers them."""
