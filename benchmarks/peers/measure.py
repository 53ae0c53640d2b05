"""Run one tool as a subprocess and measure it: wall time, peak memory of its whole process
tree, exit status, under an address-space cap so a tool that wants too much memory fails with
MemoryError instead of taking the machine (other work runs on it).

Peak memory (`peak_memory_mb`, what the ratios use) is the larger of (a) the child's own peak
RSS from `os.wait4` (ru_maxrss: the largest of the child and its waited-for descendants) and
(b) the largest sum of PSS (proportional set size, /proc/PID/smaps_rollup) over the child and
all its descendants, polled every `POLL_S` s (catches a tree of several processes; may miss a
peak shorter than the poll). PSS counts a page shared by k processes of the tree (forked
workers' copy-on-write pages, a shared mapping they write into) 1/k in each, so the sum counts
it once; the sum of RSS (`max_tree_rss_mb`, also reported, the earlier measure) counts it k
times. For one process PSS ≤ RSS (its shared libraries are shared with other programs).
"""

from __future__ import annotations

import os
import resource
import subprocess
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

POLL_S = 0.1
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
MEMORY_ERROR_MARKS = ("MemoryError", "Unable to allocate", "std::bad_alloc", "Cannot allocate")


@dataclass(frozen=True)
class RunStats:
    command: list[str]
    returncode: int
    wall_s: float
    peak_memory_mb: float  # max(max_process_rss_mb, max_tree_pss_mb): what the ratios use
    peak_rss_mb: float  # max(max_process_rss_mb, max_tree_rss_mb): the earlier measure
    max_process_rss_mb: float  # ru_maxrss of the child (wait4)
    max_tree_rss_mb: float  # polled sum of RSS over the process tree
    max_tree_pss_mb: float  # polled sum of PSS over the process tree
    memory_cap_gb: float | None
    memory_error: bool  # the log shows an allocation failure
    timed_out: bool
    log: str
    walls_s: tuple[float, ...] = ()  # every run's wall time when the run was repeated

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> RunStats:
        """From `to_dict`, also of results written before the PSS fields existed (their peak
        memory is then the RSS measure)."""
        earlier = {"peak_memory_mb": values["peak_rss_mb"], "max_tree_pss_mb": float("nan")}
        return cls(**{**earlier, **values})


def _children(pid: int) -> list[int]:
    """Child processes of `pid` (from /proc/PID/task/TID/children: cheap, no full scan)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                found.extend(int(c) for c in handle.read().split())
        except OSError:
            continue
    return found


def tree_rss_bytes(root: int) -> int:
    """Sum of the resident set sizes of `root` and all its descendants (bytes)."""
    return tree_memory_bytes(root)[0]


def tree_memory_bytes(root: int) -> tuple[int, int]:
    """(sum of RSS, sum of PSS) of `root` and all its descendants, bytes."""
    rss, pss, todo = 0, 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(_children(pid))
        try:
            with open(f"/proc/{pid}/statm", "rb") as handle:
                rss += int(handle.read().split()[1]) * PAGE_BYTES
            with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
                for line in handle:
                    if line.startswith(b"Pss:"):
                        pss += int(line.split()[1]) * 1024  # kB
                        break
        except OSError:
            continue
    return rss, pss


def _cap(limit_bytes: int | None):
    def apply() -> None:
        if limit_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return apply


def run_measured(
    command: list[str],
    log: Path,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    memory_cap_gb: float | None = 12.0,
    timeout_s: float | None = None,
    poll: bool = True,
) -> RunStats:
    """Run `command` (stdout and stderr to `log`), wait for it and measure it. `poll`: poll
    the process tree's RSS and PSS (every `POLL_S` s); without it only the child's own peak
    RSS is measured (wait4), and the run's wall time carries no cost of the measurement: the
    poll reads /proc/PID/smaps_rollup, which walks the page tables of every process of the
    tree, ~0.1 s of a 2.7 s run of ours on this 2-core machine, where the poller takes CPU
    from a command that uses both cores."""
    limit = None if memory_cap_gb is None else int(memory_cap_gb * 2**30)
    peak_tree, peak_pss = 0, 0
    with open(log, "w", encoding="utf-8") as out:
        start = time.perf_counter()
        process = subprocess.Popen(  # noqa: S603 - our own command lines
            command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
            preexec_fn=_cap(limit),
        )  # fmt: skip
        done = threading.Event()

        def poll_tree() -> None:
            nonlocal peak_tree, peak_pss
            while not done.is_set():
                rss, pss = tree_memory_bytes(process.pid)
                peak_tree, peak_pss = max(peak_tree, rss), max(peak_pss, pss)
                done.wait(POLL_S)

        poller = threading.Thread(target=poll_tree, daemon=True)
        if poll:
            poller.start()
        timed_out = False
        deadline = None if timeout_s is None else start + timeout_s
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if deadline is not None and time.perf_counter() > deadline:
                timed_out = True
                process.kill()
                pid, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.01)
        wall = time.perf_counter() - start
        done.set()
        if poll:
            poller.join()
        process.returncode = os.waitstatus_to_exitcode(status)
    text = log.read_text(encoding="utf-8", errors="replace")
    max_process = usage.ru_maxrss / 1024.0  # KiB on Linux
    if not poll:
        peak_tree = peak_pss = float("nan")
    return RunStats(
        command=[str(c) for c in command],
        returncode=process.returncode,
        wall_s=wall,
        peak_memory_mb=max(max_process, peak_pss / 2**20) if poll else max_process,
        peak_rss_mb=max(max_process, peak_tree / 2**20) if poll else max_process,
        max_process_rss_mb=max_process,
        max_tree_rss_mb=peak_tree / 2**20,
        max_tree_pss_mb=peak_pss / 2**20,
        memory_cap_gb=memory_cap_gb,
        memory_error=any(mark in text for mark in MEMORY_ERROR_MARKS),
        timed_out=timed_out,
        log=str(log),
    )
