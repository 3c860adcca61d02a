"""Buffers the supervisor owns and a worker may use: the inputs and outputs of one case.

The supervisor allocates them and hands a worker a view; nothing of the supervisor's own memory
(its private copy of the inputs, the expected outputs, the baseline's outputs) is reachable from
a worker's address space.
- CPU: a sealed memfd per buffer, passed over the channel (SCM_RIGHTS). The seals forbid shrinking
  or growing it, so a worker cannot truncate the file under the supervisor's mapping (SIGBUS).
- CUDA: a dedicated ``cuMemAlloc`` per buffer (never the caching allocator, whose segments hold
  other tensors) exported with ``cuIpcGetMemHandle``; the worker maps it with ``cuIpcOpenMemHandle``.
"""

from __future__ import annotations

import ctypes
import fcntl
import mmap
import os
from dataclasses import dataclass
from typing import Any

import torch

_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
_MAX_DIMS = 8


@dataclass
class Buffer:
    """One shared buffer, on the supervisor's side: the tensor, and what a worker needs to map it."""

    name: str
    tensor: torch.Tensor
    wire: dict[str, Any]
    fd: int | None = None


def nbytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n * torch.empty((), dtype=dtype).element_size()


def allocate(name: str, shape: tuple[int, ...], dtype: torch.dtype, device: str, role: str = "in") -> Buffer:
    size = nbytes(shape, dtype)
    wire: dict[str, Any] = {
        "name": name,
        "role": role,
        "shape": list(shape),
        "dtype": str(dtype).removeprefix("torch."),
        "nbytes": size,
    }
    if device == "cuda":
        ptr, handle = _cuda().alloc(max(size, 1))
        wire["handle"] = handle.hex()
        return Buffer(name, _view(_CudaMemory(ptr, size), shape, dtype), wire)
    fd = os.memfd_create(f"kcoral-{name}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, max(size, 1))
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
    return Buffer(name, _map(fd, shape, dtype, size), wire, fd)


def attach(wire: dict[str, Any], fd: int | None, device: str) -> torch.Tensor:
    """A worker's tensor over the supervisor's buffer."""
    shape = tuple(int(d) for d in wire["shape"])
    dtype = getattr(torch, str(wire["dtype"]))
    if not isinstance(dtype, torch.dtype) or len(shape) > _MAX_DIMS:
        raise ValueError(f"bad buffer description {wire!r}")
    size = nbytes(shape, dtype)
    if device == "cuda":
        return _view(_CudaMemory(_cuda().open(bytes.fromhex(wire["handle"])), size), shape, dtype)
    if fd is None or os.fstat(fd).st_size < size:
        raise ValueError(f"buffer {wire.get('name')!r} came without a large enough file")
    return _map(fd, shape, dtype, size)


def reset_persisting_l2() -> None:
    _cuda().reset_persisting_l2()


def _map(fd: int, shape: tuple[int, ...], dtype: torch.dtype, size: int) -> torch.Tensor:
    mm = mmap.mmap(fd, max(size, 1), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    flat = torch.frombuffer(mm, dtype=torch.uint8, count=size) if size else torch.empty(0, dtype=torch.uint8)
    return flat.view(dtype).reshape(shape)


def _view(memory: _CudaMemory, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    flat = torch.as_tensor(memory, device="cuda")
    return flat.view(dtype).reshape(shape)


class _CudaMemory:
    """Raw device memory seen through ``__cuda_array_interface__`` (bytes; torch views it as any dtype)."""

    def __init__(self, ptr: int, size: int) -> None:
        self.ptr, self.size = ptr, size

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": (self.size,), "typestr": "|u1", "data": (self.ptr, False), "version": 3}


class _IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]


class _Driver:
    """The few CUDA driver calls the buffers need, on the context torch made current."""

    def __init__(self) -> None:
        torch.cuda.init()
        torch.zeros(1, device="cuda")  # makes the primary context current on this thread
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.lib.cuIpcOpenMemHandle_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), _IpcHandle, ctypes.c_uint]

    def _check(self, code: int, what: str) -> None:
        if code != 0:
            raise RuntimeError(f"{what} failed with CUDA driver error {code}")

    def alloc(self, size: int) -> tuple[int, bytes]:
        ptr = ctypes.c_uint64()
        self._check(self.lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)), "cuMemAlloc")
        handle = _IpcHandle()
        self._check(self.lib.cuIpcGetMemHandle(ctypes.byref(handle), ptr), "cuIpcGetMemHandle")
        return ptr.value, ctypes.string_at(ctypes.addressof(handle), 64)

    def reset_persisting_l2(self) -> None:
        """Return every persisting L2 line to normal (a candidate may have set an access-policy window)."""
        self._check(self.lib.cuCtxResetPersistingL2Cache(), "cuCtxResetPersistingL2Cache")

    def open(self, handle: bytes) -> int:
        if len(handle) != 64:
            raise ValueError("a CUDA IPC handle is 64 bytes")
        ptr = ctypes.c_uint64()
        raw = _IpcHandle()
        ctypes.memmove(ctypes.addressof(raw), handle, 64)
        self._check(self.lib.cuIpcOpenMemHandle_v2(ctypes.byref(ptr), raw, 1), "cuIpcOpenMemHandle")
        return ptr.value


_DRIVER: list[_Driver] = []


def _cuda() -> _Driver:
    if not _DRIVER:
        _DRIVER.append(_Driver())
    return _DRIVER[0]
