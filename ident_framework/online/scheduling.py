"""How the estimator thread of mode=online asks the kernel to be woken on time.

- `online.realtime_priority` (SCHED_FIFO): needs root, CAP_SYS_NICE or an rtprio limit.
- `online.scheduler_slice_ms`: a short time slice of a normal (SCHED_OTHER) thread through
  sched_setattr(2) (`sched_runtime`); honoured by Linux's EEVDF scheduler (kernel >= 6.12).

Rationale: docs/design.md#online-scheduling
"""

from __future__ import annotations

import ctypes
import os
import platform

# sched_setattr's system call number per architecture (Linux)
_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274, "arm64": 274}


class _SchedAttr(ctypes.Structure):
    """struct sched_attr (linux/sched/types.h), version 1 (56 bytes)."""

    _fields_ = [
        ("size", ctypes.c_uint32),
        ("sched_policy", ctypes.c_uint32),
        ("sched_flags", ctypes.c_uint64),
        ("sched_nice", ctypes.c_int32),
        ("sched_priority", ctypes.c_uint32),
        ("sched_runtime", ctypes.c_uint64),  # ns: the time slice of a SCHED_OTHER task
        ("sched_deadline", ctypes.c_uint64),
        ("sched_period", ctypes.c_uint64),
    ]


def realtime_scheduling(priority: int, say) -> str:
    """SCHED_FIFO for the calling thread (else a note); the scheduling, as a phrase."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except (PermissionError, OSError) as error:
        say(
            f"note: online.realtime_priority={priority} not applied ({error.strerror}): needs "
            "root, CAP_SYS_NICE or an rtprio limit (ulimit -r); running with normal scheduling"
        )
        return "normal (SCHED_OTHER): real-time priority refused"
    return f"SCHED_FIFO priority {priority}"


def short_time_slice(slice_ms: float, say) -> str:
    """A time slice of `slice_ms` ms for the calling thread; the scheduling, as a phrase."""
    number = _SCHED_SETATTR.get(platform.machine())
    if os.name != "posix" or platform.system() != "Linux" or number is None:
        return "normal (SCHED_OTHER)"
    attr = _SchedAttr(size=ctypes.sizeof(_SchedAttr), sched_policy=os.SCHED_OTHER)
    attr.sched_nice = os.getpriority(os.PRIO_PROCESS, 0)
    attr.sched_runtime = int(round(slice_ms * 1e6))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(number, 0, ctypes.byref(attr), 0) != 0:
        error = os.strerror(ctypes.get_errno())
        say(f"note: online.scheduler_slice_ms={slice_ms:g} not applied ({error})")
        return "normal (SCHED_OTHER)"
    return f"normal (SCHED_OTHER), time slice {slice_ms:g} ms"
