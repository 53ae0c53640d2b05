"""Zero-phase low-pass speed: the project's compiled filter against scipy.signal.sosfiltfilt.

    python benchmarks/bench_zero_phase_filter.py [--samples 1e5] [--channels 6,18,48]

Prints ms per call and ns per sample and channel for (N, ch) columns and for channels in rows
(`zero_phase_filter_channels`, the parallel friction columns' form), SciPy's beside them, and
the largest difference from SciPy relative to the signal's scale.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ident_framework.data.zero_phase_lowpass import (
    butterworth_lowpass,
    zero_phase_filter,
    zero_phase_filter_channels,
)


def best_of(function, repeat: int = 5) -> float:
    """Fastest wall time (s) of `repeat` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=float, default=1e5)
    parser.add_argument("--channels", default="6,18,48")
    parser.add_argument("--cutoff-hz", type=float, default=5.0)
    parser.add_argument("--rate-hz", type=float, default=500.0)
    args = parser.parse_args()
    import scipy.signal

    n = int(args.samples)
    sos = butterworth_lowpass(4, args.cutoff_hz, args.rate_hz)
    rng = np.random.default_rng(0)
    print(f"{n} samples, order 4, {args.cutoff_hz} Hz at {args.rate_hz} Hz")
    print("channels  columns ms (ns)   rows ms (ns)   scipy ms (ns)   ratio scipy/rows  max diff")
    for channels in (int(c) for c in args.channels.split(",")):
        x = np.cumsum(rng.standard_normal((n, channels)), axis=0)
        rows = np.ascontiguousarray(x.T)
        zero_phase_filter(sos, x), zero_phase_filter_channels(sos, rows)  # compile / load
        columns = best_of(lambda x=x: zero_phase_filter(sos, x))
        in_rows = best_of(lambda rows=rows: zero_phase_filter_channels(sos, rows))
        reference = best_of(lambda x=x: scipy.signal.sosfiltfilt(sos, x, axis=0))
        expected = scipy.signal.sosfiltfilt(sos, x, axis=0)
        diff = np.abs(zero_phase_filter(sos, x) - expected).max() / np.abs(expected).max()
        per = 1e9 / (n * channels)
        print(
            f"{channels:8d}  {columns * 1e3:7.1f} ({columns * per:4.1f})"
            f"   {in_rows * 1e3:7.1f} ({in_rows * per:4.1f})"
            f"   {reference * 1e3:7.1f} ({reference * per:4.1f})"
            f"   {reference / in_rows:8.2f}          {diff:.1e}"
        )


if __name__ == "__main__":
    main()
