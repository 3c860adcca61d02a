"""kcoral: a remote GPU benchmark server and its client.

The repository keeps one folder per part (runner/, cli/, tasks/, profiling/, images/); this package
names them ``kcoral.runner``, ``kcoral.cli``, ... (links to those folders), so an installed kcoral
adds one top-level name to site-packages.
"""
