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
the evaluation says so (its report's ``wake_latency``). An operator leaves the host's own idle policy
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


@contextmanager
def wake_latency(limit_us: int, path: str = PATH) -> Iterator[str]:
    """Hold a wake-up latency of at most ``limit_us`` microseconds on every CPU while inside. Yields what
    holds: ``"0 us"``, or why nothing does (``"not held: ..."``, or :func:`none_asked` for a limit of
    :data:`HOSTS_OWN_US` or more, which the request's int32 could not carry past 2**31 - 1 anyway)."""
    if limit_us >= HOSTS_OWN_US:
        yield none_asked(limit_us)
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


def holdable(limit_us: int, path: str = PATH) -> dict[str, object]:
    """What an evaluation here would hold (/v1/health, kcoral doctor): ``{"ok": True, "held": "0 us"}``,
    or ``{"ok": False, "held": "not held: why"}`` where the file cannot be opened for writing."""
    if limit_us >= HOSTS_OWN_US:
        return {"ok": True, "held": none_asked(limit_us)}
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CLOEXEC))
    except OSError as exc:
        return {"ok": False, "held": f"not held: {path}: {exc.strerror or exc}"}
    return {"ok": True, "held": f"{limit_us} us while an evaluation runs"}
