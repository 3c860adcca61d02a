#!/bin/bash
# The Ray cluster backend on the single-GPU host (docs/cluster.md): the Ray layer of
# scripts/make-gpuhost-ray.sh unpacked into $RAY_SITE (default /opt/kcoral-ray), Docker and the
# toolchain image as for a single server (scripts/gpu-host-prepare.sh), a Ray head with token
# authentication and no dashboard, `kcoral agent --ray` for this host with the job options
# `kcoral serve` gets here, and a front end `kcoral serve --ray` on port 8902, started as
# tests/cluster/raycluster.py starts them. Then:
#   a. kcoral gpus through the front end lists the host's GPU slot with the type its agent registered;
#   b. a python job of that type sees one GPU (nvidia-smi -L, torch), and not the cluster's token;
#   c. the GPU-clean check (runner/gpuclean.py): a normal job leaves the GPU in service; a process
#      started on the host while a job runs, holding CUDA memory, gets the GPU drained when the job
#      ends, and the next job waits. No command undrains a GPU: a new agent of the host starts clean;
#   d. kcoral eval of kda/forward_b1_t512_h8 with its template (EVAL=0 skips it);
#   e. SIGTERM to the agent while a job runs: the job ends well, the agent leaves, no container is left.
# Each check prints `expected ...: OK|UNEXPECTED`. What it prints goes to $OUT/cluster.log too
# (default OUT=/tmp/kcoral-cluster), beside the daemons' logs and Ray's.
# STAND_IN=TYPE rehearses it on a machine without a GPU: a CPU slot stands in for TYPE, jobs run
# /usr/bin/python3 (the GPU checks come out UNEXPECTED).
# Usage: bash scripts/gpu-host-cluster.sh BUNDLE.tar.xz SERVER_WHEELS JOB_WHEELS RAY_PARTS_DIR
#        (RAY_PARTS_DIR holds ray-site.tar.xz.part*; not read when $RAY_SITE has the layer already)
set -u
out=${OUT:-/tmp/kcoral-cluster}
site=${RAY_SITE:-/opt/kcoral-ray}
#: the Ray temp dir (short: Ray's socket paths), the data dirs, and the pids of the daemons started here
work=/tmp/kcc
host=gpuhost
mkdir -p "$out"
exec > >(tee "$out/cluster.log") 2>&1
if [ -f "$work/pids" ]; then  # an earlier run cut short: its daemons, each a process group of its own
  while read -r pid; do kill -KILL -- "-$pid" 2>/dev/null; done <"$work/pids"
fi
rm -rf "$work" && mkdir -p "$work"

ok=0 bad=0
step() { echo; echo "== $* (at $SECONDS s)"; }
check() {  # check WHAT COMMAND...: the expectation line, by COMMAND's exit status
  local what=$1; shift
  if "$@"; then echo "expected $what: OK"; ok=$((ok + 1)); else echo "expected $what: UNEXPECTED"; bad=$((bad + 1)); return 1; fi
}
wait_for() {  # wait_for SECONDS COMMAND...: until COMMAND succeeds; 1 if it never did
  local end=$((SECONDS + $1)); shift
  until "$@"; do [ "$SECONDS" -ge "$end" ] && return 1; sleep 0.5; done
}
pj() { python3 -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }  # pj EXPR on d
daemon() {  # daemon LOG COMMAND...: COMMAND in a session of its own, its pid in $! and in $work/pids
  local log=$1; shift
  setsid "$@" >"$log" 2>&1 </dev/null &
  echo $! >>"$work/pids"
}
alive() { kill -0 "$1" 2>/dev/null; }
gone() { ! alive "$1"; }
cleanup() {  # at the end, or wherever the script stops: the daemons started here, and what they left
  local pid
  for pid in ${hog:-} ${front:-} ${agent:-}; do kill -TERM -- "-$pid" 2>/dev/null; done
  for pid in ${front:-} ${agent:-}; do wait_for 20 gone "$pid"; done
  # the rest, the Ray head's group (its GCS, raylet and workers) too, as raycluster.py ends a node
  { while read -r pid; do kill -KILL -- "-$pid" && wait "$pid"; done <"$work/pids"; } 2>/dev/null
  sleep 1
  if pgrep -af "$work/r"; then  # a Ray process of this run's temp dir that left the head's group
    echo "UNEXPECTED: Ray processes left (above): killed"; pgrep -f "$work/r" | xargs -r kill -KILL
  fi
  [ -n "${instance:-}" ] && docker ps -aq --filter "label=kcoral.instance=$instance" | xargs -r docker rm -f >/dev/null
  mkdir -p "$out/ray-logs" && find "$work/r/session_latest/logs/" -maxdepth 1 -type f -size -5M \
    -exec cp {} "$out/ray-logs/" \; 2>/dev/null
  echo "summary: $ok OK, $bad UNEXPECTED, $SECONDS s"
}
trap cleanup EXIT

step "the Ray layer in $site"
if [ ! -f "$site/ray/__init__.py" ]; then
  mkdir -p "$site" && cat "$4"/ray-site.tar.xz.part* | xz -d | tar -C "$site" -xf - || exit 1
fi
source scripts/gpu-host-prepare.sh "$1" "$2" "$3"
export PYTHONPATH=$site:$PYTHONPATH PATH=$site/bin:$PATH
python3 -c 'import sys, ray; print("Python", sys.version.split()[0], "ray", ray.__version__, ray.__file__)' || exit 1
export RAY_AUTH_MODE=token RAY_USAGE_STATS_ENABLED=0
RAY_AUTH_TOKEN=$(python3 -c 'import secrets; print(secrets.token_hex(16))') && export RAY_AUTH_TOKEN

if [ -n "${STAND_IN:-}" ]; then
  type=$STAND_IN uuids=""
  head_opts=(--resources "{\"kcoral_gpu_type_$STAND_IN\": 1}")
  agent_opts=(--gpus none --cpu-slots 1 "${job_opts[@]}" --python /usr/bin/python3)
else
  name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
  name=${name#NVIDIA }; type=${name%% *}  # runner.leases.gpu_type: "NVIDIA H200" -> H200
  uuids=$(nvidia-smi --query-gpu=uuid --format=csv,noheader)
  head_opts=()
  agent_opts=(--gpus auto --cpu-slots 1 "${job_opts[@]}")
fi
echo "GPU type expected: $type"
instance=$(python3 -c 'import sys; from pathlib import Path; from kcoral.runner.settings import Settings
print(Settings(data_dir=Path(sys.argv[1]).resolve()).instance)' "$work/agent")
addr=127.0.0.1:6390
export KCORAL_REMOTE=http://127.0.0.1:8902

step "a Ray head at $addr: token authentication, no dashboard"
daemon "$out/head.log" ray start --block --head --port 6390 --node-ip-address 127.0.0.1 --temp-dir "$work/r" \
  --include-dashboard=false --disable-usage-stats --num-cpus 1 --object-store-memory 1000000000 "${head_opts[@]}"
wait_for 90 grep -q "Ray runtime started" "$out/head.log"
check "the Ray head started" grep -q "Ray runtime started" "$out/head.log" || { tail -n 30 "$out/head.log"; exit 1; }

start_agent() {  # start_agent N: `kcoral agent` for this host, until it serves the cluster; its pid in $agent
  echo "kcoral agent --ray $addr --host-name $host --data-dir $work/agent ${agent_opts[*]}"
  daemon "$out/agent-$1.log" python3 -m kcoral agent --ray "$addr" --host-name "$host" --data-dir "$work/agent" \
    "${agent_opts[@]}" --log-level info
  agent=$!
  wait_for 150 agent_up "$out/agent-$1.log"
  check "agent $1 serves the cluster" grep -q "serves the cluster" "$out/agent-$1.log" || tail -n 30 "$out/agent-$1.log"
}
agent_up() { grep -q "serves the cluster" "$1" || ! alive "$agent"; }
rows() {  # the front end's cluster slots, one line each: host slot type state
  kc gpus --json | pj '"\n".join(" ".join((r["host"], r["slot"], r["type"], r["state"])) for r in d.get("cluster_slots", []))'
}
listed() { rows | grep -q "^$host "; }
slot_state() { rows | awk -v h="$host" -v s="$slot" '$1 == h && $2 == s { $1 = $2 = $3 = ""; sub(/^ +/, ""); print }'; }
in_state() { [ "$(kc status "$1" --json 2>/dev/null | pj 'd["state"]')" = "$2" ]; }
unlisted() { ! listed; }
drained() { [[ "$(slot_state)" == drained* ]]; }
left() { [ "$1" = 0 ] && grep -q "left the cluster" "$2"; }  # left EXIT_CODE LOG: an agent that drained and left
on_gpu() { nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -qx "$1"; }

step "kcoral agent for host $host, and the front end kcoral serve --ray on :8902"
start_agent 1
daemon "$out/front.log" python3 -m kcoral serve --ray "$addr" --port 8902 --data-dir "$work/front" \
  --image kcoral-toolchain:latest --gpus none --cpu-slots 0 --log-level info
front=$!
wait_for 60 curl -sf "$KCORAL_REMOTE/v1/health" -o /dev/null
wait_for 60 listed
check "the front end lists host $host" listed || tail -n 30 "$out/front.log"

step "a. kcoral gpus through the front end"
kc gpus
rows | tee "$work/rows"
slot=$(awk -v h="$host" -v t="$type" '$1 == h && tolower($3) == tolower(t) { print $2; exit }' "$work/rows")
check "a slot of type $type on host $host (got: ${slot:-none})" [ -n "$slot" ]
if [ -n "$uuids" ]; then
  gpu=$(kc gpus --json | pj "next((r['gpu'] for r in d['cluster_slots'] if r['slot'] == '$slot'), '-')")
  check "its GPU is this host's ($gpu)" grep -qx "$gpu" <<<"$uuids"
fi
slot=${slot:-gpu0}

step "b. a python job with --gpu-type $type sees one GPU"
mkdir -p "$work/b"
cat >"$work/b/gpujob.py" <<'PY'
import os
import subprocess

print("RAY_AUTH_TOKEN in the job's environment:", "RAY_AUTH_TOKEN" in os.environ, flush=True)
import torch  # noqa: E402

print(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout, end="")
print(f"torch sees {torch.cuda.device_count()} GPU(s): {torch.cuda.get_device_name(0)}")
x = torch.randn(4096, 4096, device="cuda")
print(f"matmul on the GPU: {(x @ x).abs().sum().item() > 0}; {torch.cuda.memory_allocated() >> 20} MiB allocated")
PY
kc python --send "$work/b" --gpu-type "$type" --timeout 120 --json -- gpujob.py >"$out/b.json"
rc=$?
pj 'd.get("log", d)' <"$out/b.json"
check "exit 0 (got $rc)" [ "$rc" = 0 ]
check "it ran on $host/$slot" [ "$(pj 'd.get("slot")' <"$out/b.json")" = "$host/$slot" ]
check "nvidia-smi -L lists one GPU" [ "$(pj 'd.get("log", "")' <"$out/b.json" | grep -c '^GPU [0-9]*:')" = 1 ]
check "torch sees one GPU" grep -q "torch sees 1 GPU" <(pj 'd.get("log", "")' <"$out/b.json")
check "no Ray token in the job" grep -q "in the job's environment: False" <(pj 'd.get("log", "")' <"$out/b.json")

step "c1. the GPU-clean check passes after a normal job"
sleep 2  # the front end asks its hosts every second
check "$slot stays in service (state: $(slot_state))" [ "$(slot_state)" = free ]

step "c2. a process on the host holds CUDA memory on the GPU while a job runs: the GPU is drained"
id=$(kc python --detach --gpu-type "$type" --timeout 120 -c 'import time; print("napping", flush=True); time.sleep(35)')
echo "job $id"
wait_for 60 in_state "$id" running
daemon "$out/hog.log" python3 -c 'import time, torch
x = torch.ones(256 << 20, device="cuda")
print("holding", x.numel() * 4 >> 20, "MiB on", torch.cuda.get_device_name(0), flush=True)
time.sleep(300)'
hog=$!
command -v nvidia-smi >/dev/null && wait_for 60 on_gpu "$hog"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
check "the holding process (pid $hog) is on the GPU while the job runs" on_gpu "$hog"
check "the job was still running then" in_state "$id" running
kc wait "$id" --timeout 120 >/dev/null
rc=$?
check "the job itself ends well (exit $rc)" [ "$rc" = 0 ]
wait_for 15 drained
check "$slot drained: $(slot_state)" drained
kc gpus --json >"$out/gpus-drained.json"
echo "kcoral gpus --json, leases.hosts.*.drained:"
pj '{host: info["drained"] for host, info in d["leases"]["hosts"].items()}' <"$out/gpus-drained.json"
kill -- "-$hog" 2>/dev/null; wait "$hog" 2>/dev/null
next=$(kc python --detach --gpu-type "$type" --timeout 120 -c 'print("ran after the drain")')
sleep 8
kc status "$next"
check "the next job $next waits while the GPU is drained" in_state "$next" queued
rows

step "c3. no kcoral command undrains a GPU: a new agent of the host starts with its GPUs in service"
kill -TERM "$agent"
wait_for 90 gone "$agent"
wait "$agent"
check "agent 1 leaves on SIGTERM" left "$?" "$out/agent-1.log"
start_agent 2
kc wait "$next" --timeout 120
rc=$?
check "the waiting job ran on the new agent (exit $rc)" [ "$rc" = 0 ]
sleep 2
check "$slot in service again (state: $(slot_state))" [ "$(slot_state)" = free ]

if [ "${EVAL:-1}" != 0 ] && [ "$SECONDS" -lt 270 ]; then
  step "d. kcoral eval kda/forward_b1_t512_h8 (its template) through the cluster"
  mkdir -p "$work/kda" && cp tasks/kda/forward_b1_t512_h8/template.py "$work/kda/solution.py"
  kc eval kda/forward_b1_t512_h8 "$work/kda" --gpu-type "$type" --timeout 180 --output-dir "$out/eval"
  rc=$?
  pj '{k: d.get(k) for k in ("summary", "holdout", "flags")}' <"$out/eval/report.json" 2>/dev/null
  check "the template passes (exit $rc)" [ "$rc" = 0 ]
else
  step "d. skipped (EVAL=0, or $SECONDS s gone already)"
fi

step "e. SIGTERM to the agent while a job runs: it drains and leaves"
id=$(kc python --detach --gpu-type "$type" --timeout 120 -c 'import time; time.sleep(8); print("done after the SIGTERM")')
wait_for 60 in_state "$id" running
kill -TERM "$agent"
kc wait "$id" --timeout 120
rc=$?
check "the running job ends well (exit $rc)" [ "$rc" = 0 ]
wait_for 120 gone "$agent"
wait "$agent"
check "the agent leaves" left "$?" "$out/agent-2.log"
tail -n 3 "$out/agent-2.log"
left=$(docker ps -aq --filter "label=kcoral.instance=$instance")
docker ps -a --filter "label=kcoral.instance=$instance"
check "no container of the agent's is left" [ -z "$left" ]
sleep 2
check "the front end lists no slot of $host any more" unlisted

