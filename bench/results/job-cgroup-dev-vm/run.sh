#!/bin/bash
# usage: runcal.sh TAG N_DEMO LOAD CALIBRATE
tag=$1; nd=$2; load=$3; cal=$4
cd /work/main
d=$(mktemp -d /tmp/aa/data.XXXX)
kcoral serve --port 8931 --data-dir $d --tasks-dir /work/main/tasks --tasks-dir tests/fixtures/packs > /tmp/aa/$tag.server.log 2>&1 &
pid=$!
for i in $(seq 60); do curl -s localhost:8931/v1/health >/dev/null && break; sleep 1; done
python3 bench/calibration.py --remote http://127.0.0.1:8931 --task demo/softmax -n $nd --load $load --calibrate $cal --json /tmp/aa/$tag.demo.json > /tmp/aa/$tag.demo.txt 2>&1
kill $pid; wait $pid
echo finished $tag
