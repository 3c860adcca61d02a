#!/bin/bash
# issue 29 item 3 on the CPU: a floor (kcoral calibrate -n 3), then 20 A/A requests idle and 20 beside two busy loops
cd /work/main
rm -rf /tmp/aa-cpu/data
setsid python3 -m kcoral serve --data-dir /tmp/aa-cpu/data --port 8912 > /tmp/aa-cpu/server.log 2>&1 &
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:8912/v1/health >/dev/null && break; sleep 0.3; done
export KCORAL_REMOTE=http://127.0.0.1:8912
t0=$SECONDS
python3 -m kcoral calibrate demo/softmax -n 3 --json > /tmp/aa-cpu/calibrate.json; echo "calibrate: exit $? ($((SECONDS-t0)) s)"
python3 bench/calibration.py --remote $KCORAL_REMOTE --task demo/softmax -n 20 --json /tmp/aa-cpu/aa-idle.json | tail -25
python3 bench/calibration.py --remote $KCORAL_REMOTE --task demo/softmax -n 20 --load 2 --json /tmp/aa-cpu/aa-load2.json | tail -25
pkill -f "kcoral serve --data-dir /tmp/aa-cpu/data"
echo done
