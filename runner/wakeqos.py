"""How long the host's CPUs may take to wake from idle while an evaluation runs (Linux PM QoS).

A core with nothing to run idles, and a core that halts takes time to wake again: an inter-processor
interrupt and the way back out of its idle state (on a virtual machine a trip through the hypervisor;
on bare metal the exit latency of a deep C-state, tens to hundreds of microseconds). While a case is
timed the supervisor's core never sleeps (it polls for answers: tasks.harness.measure), and on a
two-core lease the baseline's and the empty call's workers share it, while the candidate's core idles
between the candidate's calls and is woken by each one: every candidate call paid a wake-up that
neither the baseline's calls nor the empty call (the protocol's cost, subtracted) paid. The same
template against itself then scored below 1.0 on the two-core dev VM, whose cores halt at once
(cpuidle haltpoll with ``guest_halt_poll_ns`` 0).

So while an evaluation's containers run, the server holds a PM QoS request: ``/dev/cpu_dma_latency``
kept open with the operator's ``eval_wake_latency_us`` written to it (0, the default: cores idle by
polling and never halt). The kernel honours the smallest request held and drops one when its file is
closed, so concurrent evaluations each hold their own and a server that dies releases its requests.
Where the file cannot be opened (not Linux, not root, a container without it) nothing is held, and
the evaluation says so (its report's ``wake_latency``). Nor where the host has no cpuidle driver
(``/sys/devices/system/cpu/cpuidle/current_driver`` reads ``none``): its idle cores then halt in the
kernel's default idle, which no request is asked about. A 2-core dev VM of that kind (a guest whose
haltpoll driver did not register) measured the template against itself at 0.81-0.92x over 16 requests
of a ~1 ms call (bench/results/two-core-layout-dev-vm). An operator leaves the host's own idle policy
with ``eval_wake_latency_us`` 2000000000 (the kernel's own value).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager

#: the CPU latency PM QoS interface: a request lasts while its file is open
PATH = "/dev/cpu_dma_latency"
#: the kernel's own value (no request held): an eval_wake_latency_us this large leaves the host's idle policy
HOSTS_OWN_US = 2_000_000_000
#: the cpuidle driver in use ("none": idle cores halt in the default idle, whatever PATH asks)
IDLE_DRIVER = "/sys/devices/system/cpu/cpuidle/current_driver"
#: what an operator does where nothing can be held (kcoral doctor says it)
NOT_ROOT_FIX = f"run the server as root on the host (it opens {PATH})"
NO_DRIVER_FIX = (
    "boot the host with a cpuidle driver (a KVM guest: cpuidle_haltpoll.force=Y on its kernel command line), or "
    "calibrate each task on its slots (`kcoral calibrate TASK`): the reports then take the cost off"
)


def unheeded(driver: str = IDLE_DRIVER) -> str:
    """Why a request would not be heeded on this host ("" where nothing says so): no cpuidle driver."""
    try:
        with open(driver, encoding="ascii", errors="replace") as f:
            name = f.read(64).strip()
    except OSError:
        return ""
    if name != "none":
        return ""
    return f"not held: this host has no cpuidle driver ({driver}: none), so its idle cores halt whatever {PATH} asks"


@contextmanager
def wake_latency(limit_us: int, path: str = PATH, driver: str = IDLE_DRIVER) -> Iterator[str]:
    """Hold a wake-up latency of at most ``limit_us`` microseconds on every CPU while inside. Yields what
    holds: ``"0 us"``, or why nothing does (``"not held: ..."``, or :func:`none_asked` for a limit of
    :data:`HOSTS_OWN_US` or more, which the request's int32 could not carry past 2**31 - 1 anyway)."""
    if limit_us >= HOSTS_OWN_US:
        yield none_asked(limit_us)
        return
    if why := unheeded(driver):
        yield why
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    except OSError as exc:
        yield f"not held: {path}: {exc.strerror or exc}"
        return
    try:
        try:
            os.write(fd, struct.pack("=i", limit_us))
        except OSError as exc:
            yield f"not held: {path}: {exc.strerror or exc}"
            return
        yield f"{limit_us} us"
    finally:
        os.close(fd)


def none_asked(limit_us: int) -> str:
    """What holds where the operator asked for the host's own idle policy."""
    return f"none asked (eval_wake_latency_us {limit_us}: the host's own idle policy)"


def held_now(path: str = PATH) -> int | None:
    """The smallest wake-up latency (us) every request together holds now; None where it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(fd, 4)
    except OSError:
        return None
    finally:
        os.close(fd)
    return struct.unpack("=i", data)[0] if len(data) == 4 else None


def holdable(limit_us: int, path: str = PATH, driver: str = IDLE_DRIVER) -> dict[str, object]:
    """What an evaluation here would hold (/v1/health, kcoral doctor): ``{"ok": True, "held": "0 us"}``,
    or ``{"ok": False, "held": "not held: why", "fix": what to do}`` where the file cannot be opened for
    writing or the host would not heed it."""
    if limit_us >= HOSTS_OWN_US:
        return {"ok": True, "held": none_asked(limit_us)}
    if why := unheeded(driver):
        return {"ok": False, "held": why, "fix": NO_DRIVER_FIX}
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CLOEXEC))
    except OSError as exc:
        return {"ok": False, "held": f"not held: {path}: {exc.strerror or exc}", "fix": NOT_ROOT_FIX}
    return {"ok": True, "held": f"{limit_us} us while an evaluation runs"}
