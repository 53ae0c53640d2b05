"""What a user sees while waiting: a bar on a terminal, a line every few seconds elsewhere.

`progress(...)` is a tqdm bar when stderr is a terminal; otherwise it writes
``desc: 40 % (12 of 30 steps), 4.1 s`` to stderr after FIRST_LINE_S, then at most every
LINE_EVERY_S, and ``desc: done, 9.8 s`` at its end if it wrote any line. `stage_line` is the line
of a finished pipeline step (off a terminal only). Nothing goes to stdout (the run's summary).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

LINE_EVERY_S = 4.0  # s between two lines of one progress off a terminal
FIRST_LINE_S = 1.0  # s before its first line (a quicker progress writes none)


def on_terminal() -> bool:
    """Whether stderr is a terminal (bars) or not (lines)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # closed or replaced without isatty
        return False


def progress(
    iterable: Iterable[Any] | None = None,
    *,
    total: float | None = None,
    desc: str,
    unit: str = "it",
    enabled: bool = True,
    **bar_options: Any,
) -> Any:
    """A progress over `iterable` (or `total` units, advanced by `update(n)`), used as tqdm;
    nothing at all when not `enabled`."""
    if on_terminal():
        from tqdm import tqdm

        return tqdm(
            iterable, total=total, desc=desc, unit=unit, file=sys.stderr,
            disable=not enabled, **bar_options,
        )  # fmt: skip
    return _Lines(iterable, total, desc, unit, enabled)


def stage_line(name: str, seconds: float) -> None:
    """The line of a pipeline step that has ended (off a terminal only)."""
    if not on_terminal():
        print(f"{name}: {seconds:.1f} s", file=sys.stderr, flush=True)


class _Lines:
    """tqdm's interface (iteration, update, close, context manager), writing lines."""

    def __init__(
        self, iterable: Iterable[Any] | None, total: float | None, desc: str, unit: str,
        enabled: bool,
    ) -> None:  # fmt: skip
        self.iterable, self.desc, self.unit, self.enabled = iterable, desc, unit, enabled
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.total, self.n = total, 0.0
        self.started = self.last = time.perf_counter()
        self.written = self.written_any = False

    def __iter__(self) -> Iterator[Any]:
        assert self.iterable is not None
        try:
            for item in self.iterable:
                yield item
                self.update()
        finally:
            self.close()

    def __enter__(self) -> _Lines:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: float = 1) -> None:
        self.n += n
        now = time.perf_counter()
        wait = LINE_EVERY_S if self.written_any else FIRST_LINE_S
        if self.enabled and now - self.last >= wait:
            self.last, self.written, self.written_any = now, True, True
            units = self.unit if self.unit.endswith("s") else f"{self.unit}s"
            done = f"{self.n:g} {units}"
            if self.total:
                done = f"{100 * self.n / self.total:.0f} % ({self.n:g} of {self.total:g} {units})"
            print(f"{self.desc}: {done}, {now - self.started:.1f} s", file=sys.stderr, flush=True)

    def set_postfix(self, *args: Any, **kwargs: Any) -> None:
        """Accepted for tqdm's interface; lines carry no postfix."""

    set_postfix_str = set_postfix

    def close(self) -> None:
        if self.enabled and self.written:
            self.written = False
            elapsed = time.perf_counter() - self.started
            print(f"{self.desc}: done, {elapsed:.1f} s", file=sys.stderr, flush=True)
