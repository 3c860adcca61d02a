"""Buffers the supervisor owns and a worker may use: the inputs and outputs of one case.

The supervisor allocates them and hands a worker a view; nothing of the supervisor's own memory
(its private copy of the inputs, the expected outputs, the baseline's outputs) is reachable from
a worker's address space.
- CPU: a sealed memfd per buffer, passed over the channel (SCM_RIGHTS). The seals forbid shrinking
  or growing it, so a worker cannot truncate the file under the supervisor's mapping (SIGBUS).
- CUDA: a dedicated VMM allocation per buffer (``cuMemCreate``; never the caching allocator, whose
  segments hold other tensors), exported as a POSIX file descriptor
  (``cuMemExportToShareableHandle``) and passed over the channel the same way; the worker imports
  it (``cuMemImportFromShareableHandle``) and maps it into an address range of its own.

Both are file descriptors, and a file descriptor is a capability: a process holds one only when
the kernel put it in its table (the process opened the object itself, or was sent it over a Unix
socket with SCM_RIGHTS). Its number means nothing outside that process, so it cannot be guessed,
forged or replayed: a worker reaches exactly the buffers it was sent, and nothing else the
supervisor allocated. A legacy CUDA IPC handle (``cuIpcGetMemHandle``) is a name instead, 64 bytes
that any process with the GPU may present to ``cuIpcOpenMemHandle``: on the H200 variants of one
handle opened 107 of the exporting process's other allocations, from the exporter's namespaces and
from new PID and IPC namespaces alike (tests/gpu/test_buffer_sharing.py). No legacy IPC handle is
exported anywhere
(a buffer's description on the wire is its name, role, shape, dtype and sizes, nothing secret),
so the candidate's container needs neither the supervisor's IPC namespace nor its PID namespace.

A CUDA buffer's device memory lives as long as some process maps it. Each process unmaps its
mapping once no tensor over it is left (the supervisor once it has dropped the side, a worker once
it has dropped the case), but not at that moment, which may fall inside a timed call: the mapping
waits in a list that the next allocation or mapping empties (:func:`release_unused`), outside
every timed window. Before this, no mapping was ever undone, and on an 80 GB H100 an evaluation of
the pinned KDA task ran the card out of memory with the buffers of cases long finished.
"""

from __future__ import annotations

import ctypes
import fcntl
import mmap
import os
from dataclasses import dataclass
from typing import Any

import torch

from kcoral.tasks.harness.driver_errors import driver_failure

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
        driver = _cuda()
        vmm = driver.rounded(size)
        driver.release_unused()
        ptr, fd = driver.create(vmm)
        wire["vmm_bytes"] = vmm
        return Buffer(name, _view(_CudaMemory(ptr, size, vmm), shape, dtype), wire, fd)
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
        driver = _cuda()
        vmm = driver.rounded(size)
        if fd is None:
            raise ValueError(f"buffer {wire.get('name')!r} came without its allocation's file descriptor")
        if wire.get("nbytes") != size or wire.get("vmm_bytes") != vmm:
            raise ValueError(f"buffer {wire.get('name')!r}: its sizes disagree with its shape and dtype")
        driver.release_unused()
        return _view(_CudaMemory(driver.import_fd(fd, vmm), size, vmm), shape, dtype)
    if fd is None or os.fstat(fd).st_size < size:
        raise ValueError(f"buffer {wire.get('name')!r} came without a large enough file")
    return _map(fd, shape, dtype, size)


def reset_persisting_l2() -> None:
    _cuda().reset_persisting_l2()


def release_unused() -> int:
    """Unmap every CUDA buffer of this process that no tensor refers to any more (the device
    synchronised first: no queued work still uses them); the bytes unmapped. Called by every
    allocation and mapping here, and by whoever drops buffers at a point where no call is timed."""
    return _DRIVER[0].release_unused() if _DRIVER else 0


def _map(fd: int, shape: tuple[int, ...], dtype: torch.dtype, size: int) -> torch.Tensor:
    mm = mmap.mmap(fd, max(size, 1), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    flat = torch.frombuffer(mm, dtype=torch.uint8, count=size) if size else torch.empty(0, dtype=torch.uint8)
    return flat.view(dtype).reshape(shape)


def _view(memory: _CudaMemory, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    flat = torch.as_tensor(memory, device="cuda")
    return flat.view(dtype).reshape(shape)


#: mappings whose last tensor is gone: (address, bytes), unmapped by the next :func:`release_unused`
_UNUSED: list[tuple[int, int]] = []


class _CudaMemory:
    """Raw device memory seen through ``__cuda_array_interface__`` (bytes; torch views it as any dtype).
    A tensor made from it holds a reference to it (torch keeps the object alive with its storage), so
    it is deleted only when no tensor over the mapping is left: the mapping then waits in
    :data:`_UNUSED` to be unmapped."""

    def __init__(self, ptr: int, size: int, vmm: int) -> None:
        self.ptr, self.size, self.vmm = ptr, size, vmm

    def __del__(self) -> None:
        _UNUSED.append((self.ptr, self.vmm))

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": (self.size,), "typestr": "|u1", "data": (self.ptr, False), "version": 3}


# Constants and layouts from cuda.h (CUDA 12 and 13 alike).
_ALLOCATION_TYPE_PINNED = 0x1  # CU_MEM_ALLOCATION_TYPE_PINNED
_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_LOCATION_TYPE_DEVICE = 0x1  # CU_MEM_LOCATION_TYPE_DEVICE
_ALLOC_GRANULARITY_MINIMUM = 0x0  # CU_MEM_ALLOC_GRANULARITY_MINIMUM
_ACCESS_FLAGS_PROT_READWRITE = 0x3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
_OUT_OF_MEMORY = 2  # CUDA_ERROR_OUT_OF_MEMORY


class _MemLocation(ctypes.Structure):
    """CUmemLocation."""

    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _MemAllocFlags(ctypes.Structure):
    """CUmemAllocationProp.allocFlags."""

    _fields_ = [
        ("compressionType", ctypes.c_ubyte),
        ("gpuDirectRDMACapable", ctypes.c_ubyte),
        ("usage", ctypes.c_ushort),
        ("reserved", ctypes.c_ubyte * 4),
    ]


class _MemAllocationProp(ctypes.Structure):
    """CUmemAllocationProp."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location", _MemLocation),
        ("win32HandleMetaData", ctypes.c_void_p),
        ("allocFlags", _MemAllocFlags),
    ]


class _MemAccessDesc(ctypes.Structure):
    """CUmemAccessDesc."""

    _fields_ = [("location", _MemLocation), ("flags", ctypes.c_int)]


_U64, _SIZE, _INT, _PTR = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int, ctypes.POINTER
#: every driver call made here: (name, argtypes); each returns a CUresult (int)
_CALLS: tuple[tuple[str, list[Any]], ...] = (
    ("cuMemGetAllocationGranularity", [_PTR(_SIZE), _PTR(_MemAllocationProp), _INT]),
    ("cuMemCreate", [_PTR(_U64), _SIZE, _PTR(_MemAllocationProp), _U64]),
    ("cuMemExportToShareableHandle", [ctypes.c_void_p, _U64, _INT, _U64]),
    ("cuMemImportFromShareableHandle", [_PTR(_U64), ctypes.c_void_p, _INT]),
    ("cuMemAddressReserve", [_PTR(_U64), _SIZE, _SIZE, _U64, _U64]),
    ("cuMemMap", [_U64, _SIZE, _SIZE, _U64, _U64]),
    ("cuMemSetAccess", [_U64, _SIZE, _PTR(_MemAccessDesc), _SIZE]),
    ("cuMemUnmap", [_U64, _SIZE]),
    ("cuMemAddressFree", [_U64, _SIZE]),
    ("cuMemRelease", [_U64]),
    ("cuCtxResetPersistingL2Cache", []),
)


class _Driver:
    """The few CUDA driver calls the buffers need, on the context torch made current."""

    def __init__(self) -> None:
        torch.cuda.init()
        torch.zeros(1, device="cuda")  # makes the primary context current on this thread
        self.device = torch.cuda.current_device()
        self.lib = ctypes.CDLL("libcuda.so.1")
        for name, argtypes in _CALLS:
            fn = getattr(self.lib, name)
            fn.argtypes, fn.restype = argtypes, ctypes.c_int
        self.prop = _MemAllocationProp(
            type=_ALLOCATION_TYPE_PINNED,
            requestedHandleTypes=_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            location=_MemLocation(_LOCATION_TYPE_DEVICE, self.device),
        )
        granularity = ctypes.c_size_t()
        self._check(
            self.lib.cuMemGetAllocationGranularity(
                ctypes.byref(granularity), ctypes.byref(self.prop), _ALLOC_GRANULARITY_MINIMUM
            ),
            "cuMemGetAllocationGranularity",
        )
        self.granularity = max(int(granularity.value), 1)

    def _check(self, code: int, what: str) -> None:
        if code != 0:
            raise RuntimeError(driver_failure(what, code))

    def rounded(self, size: int) -> int:
        """The bytes of the allocation that holds ``size`` bytes (a whole number of granules, at least one)."""
        return -(-max(size, 1) // self.granularity) * self.granularity

    def create(self, vmm: int) -> tuple[int, int]:
        """(address, file descriptor) of a new allocation of ``vmm`` bytes, mapped read/write here."""
        handle = ctypes.c_uint64()
        code = self.lib.cuMemCreate(ctypes.byref(handle), vmm, ctypes.byref(self.prop), 0)
        if code == _OUT_OF_MEMORY:  # the supervisor's handling of a full device is torch's (a case's ERROR)
            raise torch.OutOfMemoryError(driver_failure("cuMemCreate", code))
        self._check(code, "cuMemCreate")
        try:
            fd = ctypes.c_int(-1)
            self._check(
                self.lib.cuMemExportToShareableHandle(
                    ctypes.byref(fd), handle.value, _HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0
                ),
                "cuMemExportToShareableHandle",
            )
            try:
                os.set_inheritable(fd.value, False)
                return self._map(handle.value, vmm), fd.value
            except BaseException:
                os.close(fd.value)
                raise
        finally:
            self.lib.cuMemRelease(handle.value)  # the mapping (and the descriptor) keep the memory

    def import_fd(self, fd: int, vmm: int) -> int:
        """The address of the allocation behind ``fd`` (``vmm`` bytes), mapped read/write here. The
        caller may close ``fd`` afterwards: the mapping keeps the allocation."""
        handle = ctypes.c_uint64()
        self._check(
            self.lib.cuMemImportFromShareableHandle(
                ctypes.byref(handle), ctypes.c_void_p(fd), _HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
            ),
            "cuMemImportFromShareableHandle",
        )
        try:
            return self._map(handle.value, vmm)
        finally:
            self.lib.cuMemRelease(handle.value)

    def _map(self, handle: int, vmm: int) -> int:
        ptr = ctypes.c_uint64()
        self._check(self.lib.cuMemAddressReserve(ctypes.byref(ptr), vmm, 0, 0, 0), "cuMemAddressReserve")
        try:
            self._check(self.lib.cuMemMap(ptr.value, vmm, 0, handle, 0), "cuMemMap")
            try:
                access = _MemAccessDesc(_MemLocation(_LOCATION_TYPE_DEVICE, self.device), _ACCESS_FLAGS_PROT_READWRITE)
                self._check(self.lib.cuMemSetAccess(ptr.value, vmm, ctypes.byref(access), 1), "cuMemSetAccess")
            except BaseException:
                self.lib.cuMemUnmap(ptr.value, vmm)
                raise
        except BaseException:
            self.lib.cuMemAddressFree(ptr.value, vmm)
            raise
        return ptr.value

    def release_unused(self) -> int:
        """See the module's :func:`release_unused`."""
        if not _UNUSED:
            return 0
        torch.cuda.synchronize()
        freed = 0
        while _UNUSED:
            ptr, vmm = _UNUSED.pop()
            self._check(self.lib.cuMemUnmap(ptr, vmm), "cuMemUnmap")
            self._check(self.lib.cuMemAddressFree(ptr, vmm), "cuMemAddressFree")
            freed += vmm
        return freed

    def reset_persisting_l2(self) -> None:
        """Return every persisting L2 line to normal (a candidate may have set an access-policy window)."""
        self._check(self.lib.cuCtxResetPersistingL2Cache(), "cuCtxResetPersistingL2Cache")


_DRIVER: list[_Driver] = []


def _cuda() -> _Driver:
    if not _DRIVER:
        _DRIVER.append(_Driver())
    return _DRIVER[0]
