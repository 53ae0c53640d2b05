"""Zero-phase low-pass speed: the project's C filter and its numba fallback against
scipy.signal.sosfiltfilt (run on demand).

    python benchmarks/bench_zero_phase_filter.py [--samples 1e5] [--channels 6,18,48]

Prints, for the C kernel and the numba one (IDENT_FRAMEWORK_NATIVE=0), ms per call and ns per
sample and channel for (N, ch) columns and for channels in rows (`zero_phase_filter_channels`,
the parallel friction columns' form), SciPy's beside them, SciPy's time over the rows form's,
the largest difference from SciPy relative to the signal's scale, and whether C and numba agree
bit for bit. Each figure is the best of 5 calls, the forms taken in turn.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from ident_framework.data.filters import (
    butterworth_lowpass,
    c_kernel,
    zero_phase_filter,
    zero_phase_filter_channels,
)

ENGINES = {"C": "1", "numba": "0"}  # IDENT_FRAMEWORK_NATIVE


def with_engine(native: str, function):
    def run():
        before = os.environ.get("IDENT_FRAMEWORK_NATIVE")
        os.environ["IDENT_FRAMEWORK_NATIVE"] = native
        try:
            return function()
        finally:
            if before is None:
                del os.environ["IDENT_FRAMEWORK_NATIVE"]
            else:
                os.environ["IDENT_FRAMEWORK_NATIVE"] = before

    return run


def best_of(calls: dict, repeat: int = 5) -> dict[str, float]:
    """Fastest wall time (s) of each call over `repeat` rounds, the calls taken in turn."""
    best = dict.fromkeys(calls, np.inf)
    for _ in range(repeat):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=float, default=1e5)
    parser.add_argument("--channels", default="6,18,48")
    parser.add_argument("--cutoff-hz", type=float, default=5.0)
    parser.add_argument("--rate-hz", type=float, default=500.0)
    args = parser.parse_args()
    if c_kernel() is None:
        raise SystemExit("no C kernel (no C compiler, or IDENT_FRAMEWORK_NATIVE=0)")
    import scipy.signal

    n = int(args.samples)
    sos = butterworth_lowpass(4, args.cutoff_hz, args.rate_hz)
    rng = np.random.default_rng(0)
    print(f"{n} samples, order 4, {args.cutoff_hz} Hz at {args.rate_hz} Hz; ms (ns per sample·ch)")
    print(
        "channels  engine  columns ms (ns)   rows ms (ns)   scipy ms (ns)   scipy/rows"
        "  max diff  C == numba"
    )
    for channels in (int(c) for c in args.channels.split(",")):
        x = np.cumsum(rng.standard_normal((n, channels)), axis=0)
        rows = np.ascontiguousarray(x.T)
        calls = {"scipy": lambda x=x: scipy.signal.sosfiltfilt(sos, x, axis=0)}
        for name, native in ENGINES.items():
            calls[f"{name} columns"] = with_engine(native, lambda x=x: zero_phase_filter(sos, x))
            calls[f"{name} rows"] = with_engine(
                native, lambda rows=rows: zero_phase_filter_channels(sos, rows)
            )
        results = {name: call() for name, call in calls.items()}  # first calls: load, compile
        best = best_of(calls)
        expected = results["scipy"]
        same = all(
            np.array_equal(results[f"C {form}"], results[f"numba {form}"])
            for form in ("columns", "rows")
        )
        per = 1e9 / (n * channels)
        reference = best["scipy"]
        for i, name in enumerate(ENGINES):
            columns, in_rows = best[f"{name} columns"], best[f"{name} rows"]
            diff = np.abs(results[f"{name} columns"] - expected).max() / np.abs(expected).max()
            lead = f"{channels:8d}" if i == 0 else " " * 8
            scipy_figure = (
                f"{reference * 1e3:7.1f} ({reference * per:4.1f})" if i == 0 else " " * 14
            )
            print(
                f"{lead}  {name:>6}  {columns * 1e3:7.1f} ({columns * per:4.1f})"
                f"   {in_rows * 1e3:7.1f} ({in_rows * per:4.1f})   {scipy_figure}"
                f"   {reference / in_rows:8.2f}   {diff:.1e}"
                + (f"  {same!s:>10}" if i == 0 else "")
            )


if __name__ == "__main__":
    main()
