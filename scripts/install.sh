#!/bin/bash
# Shared set-up for demo.sh and test.sh: a Docker engine, kcoral itself, the CPU job image.
# Sourced; leaves $KCORAL pointing at the installed console script.
#
# Where kcoral goes: with $install_venv set (demo.sh: .venv), into that virtual environment, made here
# with the interpreter's own packages visible (--system-site-packages: what is already installed is
# not fetched again) and only the server's packages added; a stock Debian python3 refuses
# `pip install` outside a venv (PEP 668). Without it (test.sh, CI), into python3's own site with the
# test tools, as tests/conftest.py expects (the install must be this checkout's).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash .ci/start-docker.sh
py=python3
extras=test
# KCORAL_INSTALLED=1: this checkout is installed already in the python3 on PATH (tests/integration/test_demo.py
# runs the demo from a test session, whose conftest checks that): no venv, no reinstall (~5 s), no other
# python3's install changed
if [ -n "${install_venv:-}" ] && [ -z "${KCORAL_INSTALLED:-}" ]; then
  [ -x "$install_venv/bin/python" ] || python3 -m venv --system-site-packages "$install_venv"
  py="$install_venv/bin/python"
  extras=server
fi
if [ -z "${KCORAL_INSTALLED:-}" ]; then
  # this project was once installed as the distribution `kcoral` (a name PyPI gives another project):
  # an editable install of it (of any checkout) goes first, so that one distribution provides the package
  old=$("$py" -m pip show kcoral 2> /dev/null | sed -n 's/^Editable project location: //p' || true)
  if [ -n "$old" ] && [ -f "$old/runner/codecopy.py" ]; then
    "$py" -m pip uninstall -q -y --root-user-action=ignore kcoral
  fi
  "$py" -m pip install -q --disable-pip-version-check --root-user-action=ignore -e ".[$extras]"
fi
KCORAL="$("$py" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/kcoral"
"$KCORAL" images build cpu
