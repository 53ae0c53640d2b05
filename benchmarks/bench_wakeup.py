"""How late a 500 Hz loop wakes up, with the estimator's time slice (online.scheduler_slice_ms)
and with the kernel's default, in the same run (the two alternate every second, so a shared
machine's drifting load hits both alike).

    python benchmarks/bench_wakeup.py [--seconds 40] [--slice-ms 0.1] [--work-ms 0.1]

The loop does what the online estimator does between samples: sleep until the next sample is
due (every 2 ms), then `--work-ms` of computation. Lateness = wake-up time - due time; when it
is more than 10 ms behind it starts afresh (so CPU starvation does not pile up). Linux only.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import time

import numpy as np

from ident_framework.online.scheduling import _SCHED_SETATTR, _SchedAttr


def set_slice(slice_ns: int) -> None:
    """The calling thread's slice in ns (0: the kernel's default)."""
    attr = _SchedAttr(size=ctypes.sizeof(_SchedAttr), sched_policy=os.SCHED_OTHER)
    attr.sched_runtime = slice_ns
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(_SCHED_SETATTR[platform.machine()], 0, ctypes.byref(attr), 0) != 0:
        raise SystemExit(f"sched_setattr: {os.strerror(ctypes.get_errno())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--slice-ms", type=float, default=0.1)
    parser.add_argument("--work-ms", type=float, default=0.1)
    args = parser.parse_args()
    short = int(round(args.slice_ms * 1e6))
    late: dict[int, list[float]] = {0: [], short: []}
    print(f"load average {os.getloadavg()}", flush=True)
    start = time.perf_counter()
    mode, switch, due = 0, start, start
    while (now := time.perf_counter()) < start + args.seconds:
        if now >= switch:
            mode = short if mode == 0 else 0
            set_slice(mode)
            switch = now + 1.0
        due += 0.002
        if (ahead := due - time.perf_counter()) > 0:
            time.sleep(ahead)
        woke = time.perf_counter()
        late[mode].append(woke - due)
        while time.perf_counter() < woke + 1e-3 * args.work_ms:
            pass
        if woke - due > 0.01:
            due = time.perf_counter()
    set_slice(0)
    for slice_ns, values in late.items():
        ms = 1e3 * np.array(values)
        label = f"{args.slice_ms:g} ms slice" if slice_ns else "kernel's default slice"
        print(
            f"{label}: {len(ms)} wake-ups, lateness median {np.median(ms):.3f} ms, "
            f"p99 {np.percentile(ms, 99):.3f} ms, p99.9 {np.percentile(ms, 99.9):.2f} ms"
        )
    print(f"load average {os.getloadavg()} at the end")


if __name__ == "__main__":
    main()
