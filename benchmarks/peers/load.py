"""A busy machine for the timed runs (`bench_peers.py --busy`): one second process that keeps
one core busy, as a user's laptop with a browser open does, while both tools run again.

The load is a plain CPU spin in its own interpreter (`python -c "while True: pass"`), started
before the first busy run and killed after the last; its share of a core (its CPU time over the
time it lived, from /proc/PID/stat) is reported, as are the load averages when it started and
when it ended, so a spinner the host starved shows as such.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

SPIN = "while True: pass"
WARM_UP_S = 0.5  # the spinner's interpreter starts before the first busy run


@dataclass
class Spinner:
    """What the spinning process did (filled when it ends)."""

    pid: int = 0
    started: float = field(default_factory=time.perf_counter)
    seconds: float = float("nan")  # how long it lived
    cpu_s: float = float("nan")  # its CPU time (user + system)
    load_before: tuple[float, ...] = ()
    load_after: tuple[float, ...] = ()

    @property
    def share(self) -> float:
        """Its CPU time over the time it lived: 1.0 = one core all the time."""
        return self.cpu_s / self.seconds if self.seconds > 0 else float("nan")

    def note(self) -> str:
        loads = " / ".join(" ".join(f"{v:.2f}" for v in load)
                           for load in (self.load_before, self.load_after))  # fmt: skip
        return (
            f'busy machine: one spinning process (`python -c "{SPIN}"`) ran for '
            f"{self.seconds:.0f} s from before the first busy run to after the last, "
            f"{100 * self.share:.0f} % of one core (its CPU time / the time it lived); load "
            f"average (1, 5, 15 min) at its start / end: {loads}"
        )


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` (s), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    # after the command name: state is field 3, utime 14 and stime 15 (1-based)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def busy_core(warm_up_s: float = WARM_UP_S) -> Iterator[Spinner]:
    """One process spinning on a core for the duration of the `with` block."""
    process = subprocess.Popen(
        [sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    spinner = Spinner(pid=process.pid, load_before=os.getloadavg())
    try:
        time.sleep(warm_up_s)
        yield spinner
    finally:
        try:
            spinner.cpu_s = cpu_seconds(process.pid)
        except (OSError, IndexError, ValueError):
            pass
        spinner.seconds = time.perf_counter() - spinner.started
        spinner.load_after = os.getloadavg()
        process.kill()
        process.wait()
