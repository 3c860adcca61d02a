"""CUDA buffers shared from the supervisor to a worker (tasks.harness.shared), on a real GPU.

Run on the GPU host: ``pytest -o addopts='' -m gpu tests/gpu/test_buffer_sharing.py -s``.

- A child maps the parent's buffers from the file descriptors it was sent (SCM_RIGHTS), inside new
  PID and IPC namespaces as the candidate's container has them: it reads what the parent wrote and
  writes what the parent reads.
- Forgers try ``cuIpcOpenMemHandle`` on their own legacy handles and hundreds of variants of them,
  from new PID and IPC namespaces as the candidate's container has them: as the supervisor exports
  no legacy handle, nothing of the parent's opens. Forgers given a legacy handle the parent
  exported (what a candidate was given before) are run and printed for the record, from both the
  parent's namespaces and new ones: on the H200 (driver 580) the variants of one given handle
  opened 107 of the parent's allocations from either, so namespaces are no defence for a legacy
  handle; only exporting none is (bench/results/gpu-host-issue29/).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
CUDA_H = Path("/usr/local/cuda/include/cuda.h")
#: words written at the start of each of the parent's allocations, to name what a forger opened
SECRET_MARK = 0x5EC2E700  # a tensor of torch's caching allocator
LEGACY_MARK = 0x1E6AC700  # the cuMemAlloc exported with cuIpcGetMemHandle
OWN_MARK = 0x0DDBA110  # each forger's own allocations
#: seconds a forger spends at most
FORGE_BUDGET_S = 25.0


#: the candidate's container as unshare(1) makes it: its own PID and IPC namespaces, and its own /proc
#: as a container mounts one (on the H200, in new PID and IPC namespaces that kept the host's /proc,
#: cuInit failed with 304, CUDA_ERROR_OPERATING_SYSTEM)
CANDIDATE_NS = ["--pid", "--ipc", "--fork", "--mount-proc"]
#: tried too, and printed, when the candidate's namespaces cannot run CUDA here: what fails where
OTHER_NS = (["--pid", "--ipc", "--fork"], ["--ipc"], ["--pid", "--fork", "--mount-proc"])
CUINIT = "import ctypes, sys; r = ctypes.CDLL('libcuda.so.1').cuInit(0); print(r); sys.exit(r != 0)"
_PROBED: list[tuple[list[str] | None, str]] = []


def _candidate_prefix() -> tuple[list[str] | None, str]:
    """(unshare argv prefix for the candidate's namespaces, or None where CUDA cannot run in them
    here; a line saying what was tried)."""
    if _PROBED:
        return _PROBED[0]
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        _PROBED.append((None, "needs root and unshare"))
        return _PROBED[0]
    seen, ok = [], False
    for flags in (CANDIDATE_NS, *OTHER_NS):
        probe = subprocess.run([unshare, *flags, sys.executable, "-c", CUINIT], capture_output=True, timeout=60)
        said = (probe.stdout + probe.stderr).decode(errors="replace").strip()[-200:]
        seen.append(f"unshare {' '.join(flags)}: exit {probe.returncode}, cuInit {said!r}")
        if flags is CANDIDATE_NS and probe.returncode == 0:
            ok = True
            break
    line = "; ".join(seen)
    print("namespaces:", line)
    _PROBED.append(([unshare, *CANDIDATE_NS] if ok else None, line))
    return _PROBED[0]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _namespaces() -> dict[str, str]:
    return {ns: os.readlink(f"/proc/self/ns/{ns}") for ns in ("pid", "ipc")}


# --- a worker in the candidate's namespaces maps the buffers it was sent -------------------------

WORKER = textwrap.dedent(
    """
    import os, socket, sys
    import torch
    from kcoral.tasks.harness import shared
    from kcoral.tasks.harness.channel import Channel
    from kcoral.tasks.harness.worker import _fds_for

    chan = Channel(socket.socket(fileno=int(sys.argv[1])))
    message, fds = chan.recv_with_fds(timeout=120)
    try:
        data = {}
        for wire, fd in zip(message["buffers"], _fds_for(message["buffers"], fds), strict=True):
            data[wire["name"]] = shared.attach(wire, fd, "cuda")
        for fd in fds:
            os.close(fd)  # as the worker does after setup: the mappings keep the allocations
        x, y = data["x"], data["y"]
        y.copy_(torch.arange(y.numel(), device="cuda", dtype=torch.int32).reshape(y.shape) * 3 + 1)
        torch.cuda.synchronize()
        chan.send({
            "ok": True,
            "x_sum": float(x.double().sum()),
            "x_head": x.flatten()[:4].tolist(),
            "empty": list(data["e"].shape),
            "pid": os.getpid(),
            "ns": {ns: os.readlink(f"/proc/self/ns/{ns}") for ns in ("pid", "ipc")},
        })
    except Exception as exc:
        chan.send({"ok": False, "error": repr(exc)})
    """
)


def _share_with_worker(torch: Any, prefix: list[str]) -> tuple[dict[str, Any], bool]:
    """Buffers allocated, filled and sent to a worker started under ``prefix``; (its answer, whether
    the parent then reads the pattern it wrote)."""
    from kcoral.tasks.harness import shared
    from kcoral.tasks.harness.channel import Channel

    bufs = [
        shared.allocate("x", (1000, 37), torch.float32, "cuda"),
        shared.allocate("y", (1024, 1025), torch.int32, "cuda", role="out"),
        shared.allocate("e", (0, 4), torch.bfloat16, "cuda"),
    ]
    for b in bufs:
        assert b.fd is not None and b.fd >= 0
        assert set(b.wire) == {"name", "role", "shape", "dtype", "nbytes", "vmm_bytes"}, b.wire
        assert b.wire["vmm_bytes"] >= max(b.wire["nbytes"], 1)
        assert not os.get_inheritable(b.fd)
    x, y = bufs[0].tensor, bufs[1].tensor
    x.copy_(torch.arange(x.numel(), device="cuda", dtype=torch.float32).reshape(x.shape) + 1000.5)
    y.fill_(-7)
    torch.cuda.synchronize()
    print("wires:", [b.wire for b in bufs])

    # what a worker refuses: no descriptor, sizes that disagree
    with pytest.raises(ValueError, match="without its allocation"):
        shared.attach(bufs[0].wire, None, "cuda")
    with pytest.raises(ValueError, match="sizes disagree"):
        shared.attach({**bufs[0].wire, "vmm_bytes": bufs[0].wire["vmm_bytes"] * 2}, bufs[0].fd, "cuda")
    with pytest.raises(ValueError, match="sizes disagree"):
        shared.attach({**bufs[0].wire, "nbytes": 4}, bufs[0].fd, "cuda")

    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    argv = [*prefix, sys.executable, "-c", WORKER, str(child.fileno())]
    with subprocess.Popen(argv, pass_fds=[child.fileno()], env=_env(), cwd=ROOT) as proc:
        child.close()
        chan = Channel(parent)
        try:
            chan.send({"buffers": [b.wire for b in bufs]}, [b.fd for b in bufs if b.fd is not None])
            for b in bufs:  # as the supervisor does: sent, then closed
                assert b.fd is not None
                os.close(b.fd)
                b.fd = None
            answer = chan.recv(timeout=120)
        finally:
            chan.close()
            proc.wait(timeout=60)
    expected = torch.arange(y.numel(), device="cuda", dtype=torch.int32).reshape(y.shape) * 3 + 1
    written = bool(torch.equal(y, expected))
    print(f"worker ({' '.join(prefix) or 'same namespaces'}): {answer}; parent reads its pattern: {written}")
    if answer.get("ok"):
        assert answer["x_head"] == [1000.5, 1001.5, 1002.5, 1003.5]
        assert answer["x_sum"] == float(x.double().sum())
        assert answer["empty"] == [0, 4]
    return answer, written


def test_worker_in_new_namespaces_maps_the_buffers_it_was_sent(torch: Any) -> None:
    plain = _share_with_worker(torch, [])  # the mechanism alone
    prefix, tried = _candidate_prefix()
    boxed = _share_with_worker(torch, prefix) if prefix else None
    assert plain[0]["ok"] and plain[1], plain
    if prefix is None:
        pytest.fail(f"CUDA does not run in new PID and IPC namespaces here ({tried})")
    assert boxed is not None
    answer, written = boxed
    assert answer["ok"] and written, answer
    assert answer["pid"] == 1
    assert answer["ns"]["pid"] != _namespaces()["pid"] and answer["ns"]["ipc"] != _namespaces()["ipc"]


# --- forging legacy IPC handles ------------------------------------------------------------------

FORGER = textwrap.dedent(
    """
    import collections, ctypes, json, sys, time
    args = json.loads(sys.argv[1])
    c_u64, c_int, c_uint, c_size, P = ctypes.c_uint64, ctypes.c_int, ctypes.c_uint, ctypes.c_size_t, ctypes.POINTER

    class Handle(ctypes.Structure):
        _fields_ = [("reserved", ctypes.c_char * 64)]

    lib = ctypes.CDLL("libcuda.so.1")
    for name, argtypes in (
        ("cuInit", [c_uint]),
        ("cuDeviceGet", [P(c_int), c_int]),
        ("cuDevicePrimaryCtxRetain", [P(ctypes.c_void_p), c_int]),
        ("cuCtxSetCurrent", [ctypes.c_void_p]),
        ("cuMemAlloc_v2", [P(c_u64), c_size]),
        ("cuMemsetD32_v2", [c_u64, c_uint, c_size]),
        ("cuIpcGetMemHandle", [P(Handle), c_u64]),
        ("cuIpcOpenMemHandle_v2", [P(c_u64), Handle, c_uint]),
        ("cuIpcCloseMemHandle", [c_u64]),
        ("cuMemcpyDtoH_v2", [ctypes.c_void_p, c_u64, c_size]),
    ):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = argtypes, c_int

    def ok(code, what):
        if code != 0:
            raise SystemExit(f"{what}: CUDA driver error {code}")

    ok(lib.cuInit(0), "cuInit")
    dev, ctx = c_int(), ctypes.c_void_p()
    ok(lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ok(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev.value), "cuDevicePrimaryCtxRetain")
    ok(lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    # the forger's own ten handles, as a candidate has them
    own = []
    for _ in range(10):
        ptr, h = c_u64(), Handle()
        ok(lib.cuMemAlloc_v2(ctypes.byref(ptr), 2 << 20), "cuMemAlloc")
        ok(lib.cuMemsetD32_v2(ptr.value, args["marks"]["own"], (2 << 20) // 4), "cuMemsetD32")
        ok(lib.cuIpcGetMemHandle(ctypes.byref(h), ptr.value), "cuIpcGetMemHandle")
        own.append(bytes(ctypes.string_at(ctypes.addressof(h), 64)))
    given = [bytes.fromhex(h) for h in args["given"]]

    def variants(seed):
        out = [seed]
        for width in (4, 8):
            for i in range(0, 64, width):
                word = int.from_bytes(seed[i : i + width], "little")
                for d in range(1, args["spread"] + 1):
                    for v in (word + d, word - d):
                        out.append(seed[:i] + (v % (1 << (8 * width))).to_bytes(width, "little") + seed[i + width :])
        return out

    tries, seen = [], set(own)
    for seed in given + own:
        for v in variants(seed):
            if v not in seen:
                seen.add(v)
                tries.append(v)

    names = {v: k for k, v in args["marks"].items()}
    codes, opened, tried = collections.Counter(), [], 0
    deadline = time.monotonic() + args["budget_s"]
    for v in tries:
        if time.monotonic() > deadline:
            break
        tried += 1
        raw, ptr = Handle(), c_u64()
        ctypes.memmove(ctypes.addressof(raw), v, 64)
        code = lib.cuIpcOpenMemHandle_v2(ctypes.byref(ptr), raw, 1)
        codes[code] += 1
        if code == 0:
            word = ctypes.c_uint32()
            lib.cuMemcpyDtoH_v2(ctypes.byref(word), ptr.value, 4)
            opened.append({"what": names.get(word.value, hex(word.value)), "given": v in given})
            lib.cuIpcCloseMemHandle(ptr.value)
    foreign = [o for o in opened if o["what"] != "own"]
    print(json.dumps({"tried": tried, "of": len(tries), "codes": {str(k): n for k, n in codes.items()},
                      "opened": len(opened), "foreign": len(foreign), "what": foreign[:40],
                      "ns": {ns: __import__("os").readlink(f"/proc/self/ns/{ns}") for ns in ("pid", "ipc")}}))
    """
)


def _forge(argv: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=ROOT)


def _result(name: str, proc: subprocess.Popen[str]) -> dict[str, Any]:
    try:
        out, err = proc.communicate(timeout=FORGE_BUDGET_S + 90)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    lines = out.strip().splitlines()
    if proc.returncode != 0 or not lines:
        doc: dict[str, Any] = {"failed": proc.returncode, "stderr": err[-2000:]}
    else:
        doc = json.loads(lines[-1])
    print(f"forger {name}: {json.dumps(doc)}")
    return doc


def test_forged_handles_open_nothing_of_the_parents_when_it_exports_no_legacy_handle(torch: Any) -> None:
    import ctypes

    from kcoral.tasks.harness import shared

    prefix, tried = _candidate_prefix()
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    lib.cuMemAlloc_v2.restype = ctypes.c_int
    lib.cuMemsetD32_v2.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t]
    lib.cuMemsetD32_v2.restype = ctypes.c_int
    lib.cuIpcGetMemHandle.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    lib.cuIpcGetMemHandle.restype = ctypes.c_int

    # something to aim at: the buffers a worker is sent, a tensor of torch's caching allocator, and
    # a legacy allocation exported as before (its handle is what a candidate used to be given)
    bufs = [shared.allocate(f"b{i}", (1 << 18,), torch.int32, "cuda") for i in range(4)]
    for b in bufs:
        b.tensor.fill_(0x7E57)
        if b.fd is not None:  # sent to no one: only the parent's mapping holds it
            os.close(b.fd)
            b.fd = None
    secret = torch.full((1 << 20,), SECRET_MARK, dtype=torch.int32, device="cuda")
    legacy = ctypes.c_uint64()
    assert lib.cuMemAlloc_v2(ctypes.byref(legacy), 2 << 20) == 0
    assert lib.cuMemsetD32_v2(legacy.value, LEGACY_MARK, (2 << 20) // 4) == 0
    handle = ctypes.create_string_buffer(64)
    assert lib.cuIpcGetMemHandle(ctypes.addressof(handle), legacy.value) == 0
    torch.cuda.synchronize()
    given = handle.raw.hex()
    marks = {"secret": SECRET_MARK, "legacy": LEGACY_MARK, "own": OWN_MARK, "shared buffer": 0x7E57}

    def forger(with_handle: bool, boxed: bool) -> subprocess.Popen[str]:
        args = {"given": [given] if with_handle else [], "marks": marks, "spread": 8, "budget_s": FORGE_BUDGET_S}
        return _forge([*((prefix or []) if boxed else []), sys.executable, "-c", FORGER, json.dumps(args)])

    procs = {  # all at once: the test stays short
        "parent's namespaces, given the legacy handle (the old hole, for the record)": forger(True, False),
        "parent's namespaces, no handle (the old hole, for the record)": forger(False, False),
    }
    if prefix is not None:
        procs["new namespaces, given the legacy handle (for the record)"] = forger(True, True)
        procs["new namespaces, no handle (own handles only)"] = forger(False, True)
    try:
        results = {name: _result(name, proc) for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    for name, doc in results.items():
        if "failed" not in doc:
            print(
                f"{name}: tried {doc['tried']} of {doc['of']}, opened {doc['opened']} "
                f"({doc['foreign']} not its own: {doc['what']}), error codes {doc['codes']}"
            )
    if prefix is None:
        pytest.fail(f"CUDA does not run in new PID and IPC namespaces here ({tried})")
    doc = results["new namespaces, no handle (own handles only)"]
    assert "failed" not in doc, doc
    assert doc["tried"] >= 200, doc
    assert doc["foreign"] == 0, doc  # what opened, if anything, is the forger's own memory
    assert doc["ns"] != _namespaces()
    del secret, bufs


def test_constants_and_layouts_match_cuda_h(torch: Any) -> None:
    import ctypes

    from kcoral.tasks.harness import shared

    assert ctypes.sizeof(shared._MemAllocationProp) == 32
    assert ctypes.sizeof(shared._MemAccessDesc) == 12
    if not CUDA_H.exists():
        pytest.skip(f"no {CUDA_H}")
    text = CUDA_H.read_text(errors="replace")
    for name, value in {
        "CU_MEM_ALLOCATION_TYPE_PINNED": shared._ALLOCATION_TYPE_PINNED,
        "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR": shared._HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        "CU_MEM_LOCATION_TYPE_DEVICE": shared._LOCATION_TYPE_DEVICE,
        "CU_MEM_ALLOC_GRANULARITY_MINIMUM": shared._ALLOC_GRANULARITY_MINIMUM,
        "CU_MEM_ACCESS_FLAGS_PROT_READWRITE": shared._ACCESS_FLAGS_PROT_READWRITE,
    }.items():
        found = re.search(rf"\b{name}\s*=\s*(0x[0-9a-fA-F]+|\d+)", text)
        assert found, name
        assert int(found.group(1), 0) == value, (name, found.group(1))
    for struct, fields in {
        "CUmemAllocationProp_st": [
            "type",
            "requestedHandleTypes",
            "location",
            "win32HandleMetaData",
            "compressionType",
            "gpuDirectRDMACapable",
            "usage",
            "reserved",
        ],
        "CUmemAccessDesc_st": ["location", "flags"],
        "CUmemLocation_st": ["type", "id"],
    }.items():
        body = re.search(rf"typedef struct {struct}\s*\{{(.*?)\}}\s*\w+;", text, re.S)
        assert body, struct
        code = re.sub(r"/\*.*?\*/", "", body.group(1), flags=re.S)
        names = re.findall(r"(\w+)\s*(?:\[\s*\d+\s*\])?\s*;", code)
        print(f"{struct}: {names}")
        assert names == fields, (struct, names)
