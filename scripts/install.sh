#!/bin/bash
# Shared set-up for demo.sh and test.sh: a Docker engine, kcoral itself, the CPU job image.
# Sourced; leaves $KCORAL pointing at the installed console script.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash .ci/start-docker.sh
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -e '.[test]'
KCORAL="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/kcoral"
"$KCORAL" images build cpu
