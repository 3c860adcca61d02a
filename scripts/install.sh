#!/bin/bash
# Shared set-up for demo.sh and test.sh: a Docker engine, kcoral itself, the CPU job image.
# Sourced; leaves $KCORAL pointing at the installed console script.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash .ci/start-docker.sh
# KCORAL_INSTALLED=1: this checkout is installed already (tests/integration/test_demo.py runs the demo from
# a test session, whose conftest checks that): no reinstall (~5 s), and no other python3's install changed
if [ -z "${KCORAL_INSTALLED:-}" ]; then
  # this project was once installed as the distribution `kcoral` (a name PyPI gives another project):
  # an editable install of it (of any checkout) goes first, so that one distribution provides the package
  old=$(python3 -m pip show kcoral 2> /dev/null | sed -n 's/^Editable project location: //p' || true)
  if [ -n "$old" ] && [ -f "$old/runner/codecopy.py" ]; then
    python3 -m pip uninstall -q -y --root-user-action=ignore kcoral
  fi
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -e '.[test]'
fi
KCORAL="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/kcoral"
"$KCORAL" images build cpu
