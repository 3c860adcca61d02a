#!/bin/bash
# Sourced on the GPU host: scripts/gpu-host-prepare.sh (Docker from the bundle, the server's wheels,
# the toolchain image, the task reference packages (fla-core) in /opt/kcoral-site, and the cutlass-dsl
# site, when scripts/gpu-host-profile.sh put it there), then `kcoral serve --host-toolchain`.
# Usage: source scripts/gpu-host-serve.sh BUNDLE.tar.xz SERVER_WHEELS JOB_WHEELS OUT_DIR
# KCORAL_TASKS_DIRS="DIR ...": the server's tasks dirs, each a --tasks-dir (unset: the repository's tasks/)
set -u
out=$4; mkdir -p "$out"
source scripts/gpu-host-prepare.sh "$1" "$2" "$3"
tasks_opts=()
for d in ${KCORAL_TASKS_DIRS:-}; do tasks_opts+=(--tasks-dir "$d"); done
# KCORAL_KEEP_SERVER=1: a server an earlier call started on this (warm) machine answers: keep it
if [ "${KCORAL_KEEP_SERVER:-0}" = 1 ] && curl -sf http://127.0.0.1:8901/v1/health >/dev/null; then
  echo "keeping the running server"; unset KCORAL_WARM_UP
else
  pkill -f "python3 -m kcoral serve" && sleep 1
  # KCORAL_WARM_UP=TASK: the server evaluates that task's template at its start (runner.warmup)
  setsid python3 -m kcoral serve "${job_opts[@]}" ${tasks_opts[@]+"${tasks_opts[@]}"} --data-dir /tmp/kc --port 8901 \
    ${KCORAL_WARM_UP:+--warm-up "$KCORAL_WARM_UP"} >"$out/server.log" 2>&1 &
fi
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:8901/v1/health >/dev/null && break; sleep 0.2; done
if ! curl -sf http://127.0.0.1:8901/v1/health >/dev/null; then  # say why at once: the rest would wait for nothing
  echo "the server did not start:"; tail -n 20 "$out/server.log"; exit 1
fi
export KCORAL_REMOTE=http://127.0.0.1:8901
# where evaluations run (runner.jobcgroup): cgroup v2 on this host
curl -sf http://127.0.0.1:8901/v1/health | python3 -c 'import json,sys; print("leased cores:", json.load(sys.stdin)["docker"].get("job_cgroup"))'
# the host Python's bytecode for the jobs (runner.pycache): the first evaluation waits for it
t0=$SECONDS
for _ in $(seq 1 600); do
  state=$(curl -sf http://127.0.0.1:8901/v1/health | python3 -c 'import json,sys; print(json.load(sys.stdin).get("toolchain_bytecode", "off"))')
  [ "$state" != compiling ] && break; sleep 0.5
done
echo "toolchain bytecode after $((SECONDS - t0)) s: $state"
if [ -n "${KCORAL_WARM_UP:-}" ]; then  # the first evaluations wait for it too: how long it took is the cold start
  t0=$SECONDS
  for _ in $(seq 1 1200); do
    warm=$(curl -sf http://127.0.0.1:8901/v1/health | python3 -c 'import json,sys; w=json.load(sys.stdin)["warm_up"][0]; print(w["state"], w["verdict"])')
    [ "${warm%% *}" = finished ] && break; sleep 0.5
  done
  echo "warm-up of $KCORAL_WARM_UP: $warm after $((SECONDS - t0)) s"
fi
