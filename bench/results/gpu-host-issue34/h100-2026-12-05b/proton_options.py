"""Which Proton mode options the host's Triton compiles for examples/proton_capture (run on the GPU host,
from the repository root, with kcoral importable): one line of JSON per option set."""

import json
import os
import subprocess
import sys
import tempfile

from kcoral.profiling.iket_load import load
from kcoral.profiling.iket_summary import summarize

CAPTURE = "examples/proton_capture/capture.py"
SETS = [
    [],
    ["--granularity=warp"],
    ["--granularity=warp_2"],
    ["--granularity=warp_group"],
    ["--granularity=cta"],
    ["--buffer-type=global"],
    ["--buffer-strategy=flush"],
    ["--granularity=warp_2", "--buffer-type=global"],
    ["--granularity=warp_group", "--buffer-type=global"],
]
for opts in SETS:
    d = tempfile.mkdtemp()
    env = {**os.environ, "TRITON_CACHE_DIR": d + "/cache"}
    cmd = [sys.executable, "-m", "kcoral.profiling.proton_run", "--name", d + "/p", "--data", "trace", *opts, "--"]
    r = subprocess.run([*cmd, CAPTURE, "20000", "50000"], capture_output=True, text=True, timeout=120, env=env)
    errors = [line for line in r.stderr.splitlines() if "error" in line.lower()][-4:]
    counts = None
    if r.returncode == 0 and os.path.exists(d + "/p.chrome_trace"):
        doc = summarize(load(d + "/p.chrome_trace"))
        counts = {x["name"]: (x["count"], round(x["median"])) for x in doc["launches"][0]["ranges"]}
    print(json.dumps({"opts": opts, "rc": r.returncode, "counts": counts, "errors": [e[:400] for e in errors]}))
