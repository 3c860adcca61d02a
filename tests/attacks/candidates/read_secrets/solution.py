"""Attack 2 (read secrets): look for the judge's files, the holdout and sample keys, the server's env
and the supervisor's processes (in its own PID namespace: each one visible is printed as
FOREIGN-PROCESS; its memory, files, descriptors, environment, signals); print every hit as
SECRET-FOUND. Otherwise an honest softmax."""

import os
import re

import torch

SUSPECT_NAME = re.compile(r"expected|holdout|trusted_baseline|verdict|\.key$|nonce|secret", re.I)
SKIP = {"/proc", "/sys", "/dev", "/usr", "/lib", "/lib64", "/bin", "/sbin"}


def report(kind, what):
    print(f"SECRET-FOUND {kind}: {what}", flush=True)


def scan():
    seen = 0
    for top in ("/judge", "/judge-in", "/job/judge", "/job/eval", "/kcoral-data"):
        if os.path.exists(top):
            report("dir", top)
    for root, dirs, files in os.walk("/", onerror=lambda e: None):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in SKIP]
        for f in files:
            seen += 1
            path = os.path.join(root, f)
            if SUSPECT_NAME.search(f) and os.access(path, os.R_OK) and "/site-packages/" not in path:
                report("file", path)
            if f == "cases.json":
                with open(path, errors="replace") as fh:
                    text = fh.read()
                # the judge's copy names phases, workloads and tolerances; the public one must not
                if re.search(r'"(phase|workload|tolerance)"', text):
                    report("judge case file", path)
        if seen > 300_000:
            break
    for name, value in os.environ.items():
        if re.search(r"KEY|SECRET|NONCE|HOLDOUT|TOKEN", name, re.I):
            report("env", f"{name}={value[:40]}")
    # The supervisor has a PID namespace of its own: none of its processes may be visible here (were
    # one visible, its files, memory, descriptors and environment must not be).
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                text = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        print(f"SECRET-SCAN /proc/{pid}/cmdline: {text[:200]}", flush=True)
        if re.search(r"sample_key|[0-9a-f]{64}", text):
            report(f"/proc/{pid}/cmdline", text[:200])
        if os.stat(f"/proc/{pid}").st_uid == os.getuid():
            continue  # our own container's processes
        print(f"FOREIGN-PROCESS {pid}: {text[:100]}", flush=True)
        for what in ("environ", "mem", "root/judge-in/cases.json", "root/job/out", "cwd", "fd", "maps"):
            path = f"/proc/{pid}/{what}"
            try:
                if os.path.isdir(path):
                    os.listdir(path)
                else:
                    with open(path, "rb") as fh:
                        fh.read(64)
            except OSError as exc:
                print(f"SECRET-SCAN {path}: refused ({exc.strerror})", flush=True)
                continue
            report(path, "readable")
        try:
            os.kill(int(pid), 0)
            report(f"signal {pid}", "allowed")
        except OSError as exc:
            print(f"SECRET-SCAN kill {pid}: refused ({exc.strerror})", flush=True)
    # Every process it can see (the supervisor too) has a mount table: each bind mount's source shows
    # as a path on the host's filesystem. Print them all: the test checks that none is a host path.
    for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/mountinfo") as fh:
                for line in fh:
                    fields = line.split()
                    print(f"MOUNT-ROOT {pid} {fields[3]} {fields[4]}", flush=True)
        except OSError:
            continue
    print(f"SECRET-SCAN-DONE files={seen}", flush=True)


scan()


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        torch.softmax(x, dim=-1, out=y)

    return run
