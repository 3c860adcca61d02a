#!/bin/bash
# The main job end to end on the embedded defaults: local Docker engine, SQLite job store, CPU
# slots when there is no GPU. Starts `kcoral serve`, runs examples/hello through `kcoral python`,
# stops the server. The job's result file lands in ./kcoral-out/JOB_ID/. kcoral goes into the
# virtual environment .venv (made the first time): `export PATH="$PWD/.venv/bin:$PATH"` puts it on PATH.
set -euo pipefail
install_venv=.venv
source "$(dirname "$0")/install.sh"
data=$(mktemp -d /tmp/kcoral-demo.XXXXXX)
port=${KCORAL_PORT:-8901}
"$KCORAL" serve --data-dir "$data" --port "$port" >"$data/server.log" 2>&1 &
server=$!
# the server ends by its SIGTERM (143): the demo's exit code is the job's, not that
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
export KCORAL_REMOTE=http://127.0.0.1:$port
for _ in $(seq 1 100); do "$KCORAL" gpus >/dev/null 2>&1 && break; sleep 0.2; done
"$KCORAL" python --send examples/hello --timeout 600 -- main.py
