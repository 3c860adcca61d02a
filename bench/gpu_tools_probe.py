"""What the GPU host's tools give (issue 34): real compute-sanitizer reports of small kernels of our own,
a CUPTI timeline of a two-stream program with a deliberate gap (torch.profiler, which records through
CUPTI), and Proton's intra-kernel trace of a Triton kernel with two scopes of known length.

Run on the GPU host (no Docker needed), after scripts/gpu-host-prepare.sh:

    python3 bench/gpu_tools_probe.py OUT_DIR

Each part runs in a child process of its own under a deadline and writes its files and a line of JSON
(``probe.json``: what ran, its exit code, seconds, what it found). The files become the summarisers'
fixtures (tests/fixtures/sanitizer, tests/fixtures/timeline, tests/fixtures/proton).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from kcoral.profiling.sanitizer import build_command
from kcoral.protocol.jobenv import OUTPUT_MOUNT

#: the sanitizer's kernels of our own, one bug each (the GPU test's too): oob.py, race.py, uninit.py
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "sanitizer"

#: two streams; stream B waits 20 ms on the host before its second kernel: a gap the timeline must show
TIMELINE = """
import sys, time, json
import torch
from torch.profiler import profile, ProfilerActivity

a = torch.randn(2048, 2048, device="cuda")
b = torch.randn(2048, 2048, device="cuda")
s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
torch.cuda.synchronize()
for _ in range(3):
    a @ b
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    with torch.cuda.stream(s1):
        for _ in range(4):
            c = a @ b
        d = c.to("cpu", non_blocking=False)
    with torch.cuda.stream(s2):
        e = torch.relu(a)
        torch.cuda.synchronize()
        time.sleep(0.020)           # the deliberate gap
        f = torch.sigmoid(b)
        g = f.sum()
    torch.cuda.synchronize()
prof.export_chrome_trace(sys.argv[1])
print("streams", s1.cuda_stream, s2.cuda_stream)
"""

#: Proton: two scopes that each spin a known number of SM clock cycles
PROTON = """
import sys, os, glob, inspect
import torch, triton, triton.language as tl
import triton.profiler as proton
import triton.profiler.language as pl

FIRST, SECOND = int(sys.argv[2]), int(sys.argv[3])

@triton.jit
def _clock():
    return tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)

@triton.jit
def spin_kernel(out, FIRST: tl.constexpr, SECOND: tl.constexpr):
    pl.enter_scope("first")
    t0 = _clock()
    t = t0
    while t - t0 < FIRST:
        t = _clock()
    pl.exit_scope("first")
    pl.enter_scope("second")
    t1 = _clock()
    u = t1
    while u - t1 < SECOND:
        u = _clock()
    pl.exit_scope("second")
    tl.store(out + tl.program_id(0), (u - t0).to(tl.float32))

print("proton.start", inspect.signature(proton.start))
print("proton.mode", [m for m in dir(proton.mode) if not m.startswith("_")] if hasattr(proton, "mode") else None)
if hasattr(pl, "enable_semantic"):
    pl.enable_semantic("triton")
name = os.path.join(sys.argv[1], "spin")
mode = proton.mode.Default() if hasattr(proton, "mode") else None
kwargs = {"data": "trace", "backend": "instrumentation"}
if mode is not None:
    kwargs["mode"] = mode
proton.start(name, **kwargs)
out = torch.zeros(4, device="cuda")
spin_kernel[(4,)](out, FIRST=FIRST, SECOND=SECOND, num_warps=4)
torch.cuda.synchronize()
proton.finalize()
print("kernel's own clock span per CTA:", out.tolist())
print("files:", sorted(os.listdir(sys.argv[1])))
"""

PROTON_HATCHET = PROTON.replace(
    'kwargs = {"data": "trace", "backend": "instrumentation"}', 'kwargs = {"backend": "instrumentation"}'
).replace('"spin")', '"spin-measure")')


def _run(name: str, argv: list[str], timeout: float, log: Path, env: dict[str, str] | None = None) -> dict:
    t0 = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
        rc, out = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = 124, f"timed out after {timeout} s: {e}"
    seconds = round(time.monotonic() - t0, 1)
    log.write_text(out)
    row = {"name": name, "rc": rc, "seconds": seconds, "tail": out[-600:]}
    print(json.dumps(row), flush=True)
    return row


def _sanitize(out: Path, tool: str, tag: str, command: list[str]) -> dict:
    argv = build_command([f"--tool={tool}"], command)
    argv = [a.replace(f"{OUTPUT_MOUNT}/sanitizer", str(out / f"h200-{tool}-{tag}")) for a in argv]
    return _run(f"sanitizer {tool} {tag}", argv, 150, out / f"h200-{tool}-{tag}.log")


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    facts = {
        "compute-sanitizer": shutil.which("compute-sanitizer") or "",
        "python": sys.version.split()[0],
    }
    for mod in ("torch", "triton", "cupti"):
        try:
            facts[mod] = __import__(mod).__version__
        except Exception as e:  # noqa: BLE001 - a fact to record
            facts[mod] = f"absent: {e}"
    facts["libcupti"] = subprocess.run(
        "find / -xdev -name 'libcupti.so*' 2>/dev/null | head -5", shell=True, capture_output=True, text=True
    ).stdout.split()
    print(json.dumps(facts), flush=True)
    py = sys.executable
    for script in EXAMPLES.glob("*.py"):
        shutil.copy(script, out / script.name)
    cases = (
        ("memcheck", ["oob.py"], ("oob", "masked")),
        ("racecheck", ["race.py", "shift_left"], ("broken", "fixed")),
        ("synccheck", ["race.py", "bad_syncwarp"], ("broken", "fixed")),
        ("initcheck", ["uninit.py"], ("broken", "fixed")),
    )
    for tool, argv, how in cases:
        for tag in how:
            rows.append(_sanitize(out, tool, tag, [py, str(out / argv[0]), *argv[1:], tag]))
    (out / "timeline.py").write_text(TIMELINE)
    timeline = [py, str(out / "timeline.py"), str(out / "h200-timeline.json")]
    rows.append(_run("timeline", timeline, 120, out / "timeline.log"))
    (out / "proton.py").write_text(PROTON)
    (out / "proton_measure.py").write_text(PROTON_HATCHET)
    for script in ("proton.py", "proton_measure.py"):
        rows.append(_run(script, [py, str(out / script), str(out), "20000", "50000"], 120, out / f"{script}.log"))
    (out / "probe.json").write_text(json.dumps({"facts": facts, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
