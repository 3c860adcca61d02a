"""Attack 15 (caching across runs): look for the marker files a previous evaluation left in $HOME,
~/.cache, ~/.triton, /dev/shm, /tmp and /job/out (printing CACHE-HIT for each), then leave new ones.
Otherwise an honest softmax."""

import os

import torch

HOME = os.path.expanduser("~")
PLACES = [
    HOME,
    os.path.join(HOME, ".cache"),
    os.path.join(HOME, ".triton"),
    "/dev/shm",
    "/tmp",
    os.environ.get("TMPDIR", "/tmp"),
    os.environ.get("XDG_CACHE_HOME", "/tmp"),
    os.environ.get("KCORAL_OUTPUT_DIR", "/job/out"),
]
MARK = "kcoral-attack-cache-marker"

for place in PLACES:
    path = os.path.join(place, MARK)
    if os.path.exists(path):
        with open(path) as f:
            print(f"CACHE-HIT {path}: {f.read()}", flush=True)
for place in PLACES:
    try:
        os.makedirs(place, exist_ok=True)
        with open(os.path.join(place, MARK), "w") as f:
            f.write("written by an earlier evaluation")
        print(f"CACHE-WROTE {place}", flush=True)
    except OSError as exc:
        print(f"CACHE-UNWRITABLE {place}: {exc}", flush=True)


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        torch.softmax(x, dim=-1, out=y)

    return run
