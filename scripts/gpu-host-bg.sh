#!/bin/bash
# On the GPU host: work longer than one device call (10 minutes at most), across calls while the machine
# stays warm (30 s between them). With a command, start it detached (setsid: it outlives this call),
# its output in /tmp/kcoral-bg/run.log and what it writes under $BG_OUT (/tmp/kcoral-bg/out); then, with
# or without one, wait up to WAIT_S for it to end and pack /tmp/kcoral-bg into $OUT/bg.tgz (the device
# tool brings back 8 files at most: one archive holds them all). Call again with no command, within the
# machine's warm time, to wait on and collect the same run.
# Usage: bash scripts/gpu-host-bg.sh WAIT_S [COMMAND ...]
#   e.g. bash scripts/gpu-host-bg.sh 540 env CAL_N=20 AA_N=20 OUT=/tmp/kcoral-bg/out \
#          bash scripts/gpu-host-eval.sh .gpuhost/docker-bundle.tar.xz .gpuhost/whl .gpuhost/jobwhl k,v
set -u
bg=/tmp/kcoral-bg
wait_s=${1:?usage: gpu-host-bg.sh WAIT_S [COMMAND ...]}
shift
if [ $# -gt 0 ]; then
  if [ -f "$bg/pid" ] && [ ! -f "$bg/exit" ] && kill -0 "$(cat "$bg/pid")" 2>/dev/null; then
    echo "a run started earlier is still going: call with no command to collect it"; exit 2
  fi
  rm -rf "$bg"; mkdir -p "$bg/out"
  export BG_OUT=$bg/out
  setsid bash -c '"$@" > '"$bg"'/run.log 2>&1; echo $? > '"$bg"'/exit' kcoral-bg "$@" < /dev/null > /dev/null 2>&1 &
  echo $! > "$bg/pid"
fi
[ -d "$bg" ] || { echo "no run to collect here (a fresh machine: what the last one ran is gone)"; exit 2; }
for _ in $(seq 1 "$wait_s"); do [ -f "$bg/exit" ] && break; sleep 1; done
if [ -f "$bg/exit" ]; then echo "ended: exit $(cat "$bg/exit")"; else echo "still running after ${wait_s} s"; fi
tail -n 20 "$bg/run.log"
tar czf "${OUT:-/tmp}/bg.tgz" -C /tmp kcoral-bg
