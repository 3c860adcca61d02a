"""Issue 8, class 7 and threat 22 (links and devices where the host reads): try to plant a results
file, a link to a host path and a FIFO wherever this container might share a folder with the server
(its output dir, the channel folder, the sent dir, the kernel cache); print LINK-PLANTED for each success.
Nothing this container writes is read by the server. Otherwise an honest softmax."""

import os

import torch

# (its own /tmp and /dev/shm are writable, and private: no other container and not the server reads them)
PLACES = [
    os.environ.get("KCORAL_OUTPUT_DIR", "/job/out"),
    "/job/out",
    "/chan",
    os.getcwd(),
    "/judge",
    "/judge-in",
    "/kcoral/seed-cache",
]

for place in PLACES:
    for name, make in (
        ("result.json", lambda p: os.symlink("/etc/hostname", p)),
        ("results.json", lambda p: os.symlink("/dev/console", p)),
        ("report.json", lambda p: os.mkfifo(p)),
        ("worker.sock", lambda p: os.symlink("/tmp/evil", p)),
    ):
        path = os.path.join(place, name)
        try:
            make(path)
        except OSError as exc:
            print(f"LINK-REFUSED {path}: {exc.strerror}", flush=True)
        else:
            print(f"LINK-PLANTED {path}", flush=True)


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        torch.softmax(x, dim=-1, out=y)

    return run
