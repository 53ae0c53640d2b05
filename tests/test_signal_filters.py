"""The preprocessing's own filters against SciPy's public ones (known truth): the Butterworth
design against scipy.signal.butter, the zero-phase filter against sosfiltfilt (its C kernel
and its numba fallback, `kernel_engine` in tests/conftest.py, which agree bit for bit), the
Savitzky-Golay derivative against savgol_filter; and the import the filters exist to avoid."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import signal

from ident_framework.data import filters
from ident_framework.data.filters import (
    butterworth_lowpass,
    pad_length,
    savgol_derivative,
    zero_phase_filter,
    zero_phase_filter_channels,
    zero_phase_filter_parts,
)

DESIGNS = [(o, fc, fs) for o in range(1, 9) for fc, fs in [(20, 500), (2, 500), (10, 200.034)]]


def _frequency_response(sos: np.ndarray, w: np.ndarray) -> np.ndarray:
    z = np.exp(-1j * w)[:, None]
    b, a = sos[:, :3], sos[:, 3:]
    return np.prod(
        (b[:, 0] + b[:, 1] * z + b[:, 2] * z**2) / (a[:, 0] + a[:, 1] * z + a[:, 2] * z**2), axis=1
    )


@pytest.mark.parametrize(("order", "cutoff", "rate"), DESIGNS)
def test_butterworth_design_is_scipys(order: int, cutoff: float, rate: float) -> None:
    ours = butterworth_lowpass(order, cutoff, rate)
    theirs = signal.butter(order, cutoff, fs=rate, output="sos")
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-11, atol=1e-15)
    w = np.linspace(0, np.pi, 257)
    np.testing.assert_allclose(
        np.abs(_frequency_response(ours, w)), np.abs(_frequency_response(theirs, w)), atol=1e-12
    )
    # -3 dB at the cut-off, unit gain at DC
    gain = np.abs(_frequency_response(ours, np.array([0.0, 2 * np.pi * cutoff / rate])))
    np.testing.assert_allclose(gain, [1.0, 2**-0.5], rtol=1e-9)


@pytest.mark.parametrize("order", [1, 3, 5])
def test_butterworth_high_cut_off_has_scipys_response(order: int) -> None:
    """Near Nyquist the sections may be ordered otherwise; the filter is the same."""
    ours = butterworth_lowpass(order, 200, 500)
    theirs = signal.butter(order, 200, fs=500, output="sos")
    w = np.linspace(0, np.pi, 257)
    np.testing.assert_allclose(
        _frequency_response(ours, w), _frequency_response(theirs, w), atol=1e-12
    )


def test_butterworth_rejects_a_cut_off_at_nyquist() -> None:
    with pytest.raises(ValueError, match="Hz"):
        butterworth_lowpass(4, 250, 500)


@pytest.mark.parametrize("order", [1, 2, 4, 8])
@pytest.mark.parametrize("cutoff", [0.5, 2.0, 20.0, 200.0])
@pytest.mark.usefixtures("kernel_engine")
def test_zero_phase_filter_is_sosfiltfilt(order: int, cutoff: float) -> None:
    rng = np.random.default_rng(order)
    x = np.cumsum(rng.standard_normal((5000, 7)), axis=0)  # drifting, so the edges matter
    sos = signal.butter(order, cutoff, fs=500, output="sos")
    expected = signal.sosfiltfilt(sos, x, axis=0)
    got = zero_phase_filter(sos, x)
    assert got.shape == x.shape
    assert np.max(np.abs(got - expected)) <= 1e-10 * np.max(np.abs(expected))


@pytest.mark.parametrize("n", [40, 63, 64, 65, 129])
@pytest.mark.usefixtures("kernel_engine")
def test_zero_phase_filter_short_signals_and_shapes(n: int) -> None:
    """Lengths around the block size, and an (N, a, b) input filtered along axis 0."""
    x = np.random.default_rng(n).standard_normal((n, 2, 3))
    sos = signal.butter(4, 20, fs=500, output="sos")
    expected = signal.sosfiltfilt(sos, x, axis=0)
    np.testing.assert_allclose(zero_phase_filter(sos, x), expected, atol=1e-13)


@pytest.mark.usefixtures("kernel_engine")
def test_zero_phase_filter_refuses_a_signal_shorter_than_its_padding() -> None:
    sos = signal.butter(4, 20, fs=500, output="sos")
    assert pad_length(sos) == 15  # scipy's default padlen for two sections: 3 * (2 * 2 + 1)
    with pytest.raises(ValueError, match="padding"):
        zero_phase_filter(sos, np.zeros((15, 1)))
    assert zero_phase_filter(sos, np.ones((16, 1))) == pytest.approx(np.ones((16, 1)))


@pytest.mark.parametrize(
    ("window", "polyorder", "deriv", "delta"),
    [(15, 3, 1, 0.002), (5, 3, 1, 0.01), (31, 3, 2, 0.01), (7, 2, 1, 1.0), (9, 4, 0, 1.0)],
)
def test_savitzky_golay_is_savgol_filter(
    window: int, polyorder: int, deriv: int, delta: float
) -> None:
    x = np.cumsum(np.random.default_rng(window).standard_normal((3000, 6)), axis=0) * 0.01
    expected = signal.savgol_filter(x, window, polyorder, deriv=deriv, delta=delta, axis=0)
    got = savgol_derivative(x, window, polyorder, deriv, delta)
    assert np.max(np.abs(got - expected)) <= 1e-11 * np.max(np.abs(expected))


@pytest.mark.skipif(filters.savgol_kernel() is None, reason="no C compiler")
@pytest.mark.parametrize(("window", "polyorder", "deriv"), [(15, 3, 1), (5, 3, 2), (31, 4, 0)])
def test_savitzky_golay_c_kernel_is_the_numpy_loop_bit_for_bit(
    window: int, polyorder: int, deriv: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiled rows give the numpy loop's values exactly, for (N, n) and (N, n, k)."""
    rng = np.random.default_rng(window)
    for x in (rng.standard_normal((2000, 6)), rng.standard_normal((500, 3, 4))):
        compiled = savgol_derivative(x, window, polyorder, deriv, 0.002)
        with monkeypatch.context() as patch:
            patch.setattr(filters, "savgol_kernel", lambda: None)
            looped = savgol_derivative(x, window, polyorder, deriv, 0.002)
        assert np.array_equal(compiled, looped)


def test_savitzky_golay_differentiates_a_cubic_exactly() -> None:
    t = np.arange(200) * 0.002
    x = (2 * t**3 - t**2 + 0.5 * t)[:, None]
    np.testing.assert_allclose(
        savgol_derivative(x, 11, 3, 1, 0.002)[:, 0], 6 * t**2 - 2 * t + 0.5, atol=1e-9
    )
    np.testing.assert_allclose(savgol_derivative(x, 11, 3, 2, 0.002)[:, 0], 12 * t - 2, atol=1e-6)


def test_the_identification_command_does_not_import_slow_scipy_subpackages() -> None:
    """What the filters are for: preprocessing, the regressor, tuning, estimation and every
    built-in plugin load without scipy.signal (~0.5 s since SciPy 1.15), scipy.interpolate,
    scipy.optimize, scipy.stats, scipy.spatial or scipy.linalg (0.16 s, `triangular.py`);
    each is imported only where used."""
    code = (
        "import sys\n"
        "import ident_framework.__main__, ident_framework.modes.pipeline\n"
        "from ident_framework.config.registry import get_registry\n"
        "get_registry()\n"
        "slow = {'signal', 'interpolate', 'optimize', 'stats', 'spatial', 'linalg'}\n"
        "print(sorted(m for m in sys.modules if m.startswith('scipy.')"
        " and m.split('.')[1] in slow))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.usefixtures("kernel_engine")
def test_a_list_of_column_blocks_is_filtered_as_their_stack() -> None:
    """Preprocessing passes q, tau and dq side by side without stacking them first."""
    rng = np.random.default_rng(5)
    blocks = [np.cumsum(rng.standard_normal((3001, k)), axis=0) for k in (6, 6, 2)]
    sos = butterworth_lowpass(4, 20.0, 500.0)
    stacked = zero_phase_filter(sos, np.hstack(blocks))
    np.testing.assert_array_equal(zero_phase_filter(sos, blocks), stacked)
    assert zero_phase_filter(sos, blocks[0][:, 0]).shape == (3001,)
    parts = zero_phase_filter_parts(sos, blocks)  # the same, one C-ordered array per block
    assert [p.shape for p in parts] == [b.shape for b in blocks]
    assert all(p.flags.c_contiguous for p in parts)
    np.testing.assert_array_equal(np.hstack(parts), stacked)


@pytest.mark.parametrize("order, cutoff", [(4, 5.0), (2, 80.0), (5, 20.0)])
@pytest.mark.usefixtures("kernel_engine")
def test_channels_in_rows_are_filtered_as_columns(order: int, cutoff: float) -> None:
    """The channels-in-rows form (parallel friction columns gather many channels into one
    batch) is the same filter: equal to the column form to rounding, any channel count."""
    rng = np.random.default_rng(order)
    x = np.cumsum(rng.standard_normal((4001, 7)), axis=0)
    sos = butterworth_lowpass(order, cutoff, 500.0)
    expected = zero_phase_filter(sos, x)
    got = zero_phase_filter_channels(sos, np.ascontiguousarray(x.T))
    assert got.shape == (7, 4001)
    np.testing.assert_allclose(got.T, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    one = zero_phase_filter_channels(sos, x[:, 3][None, :])
    np.testing.assert_allclose(one[0], expected[:, 3], rtol=0, atol=1e-12 * np.abs(x).max())
    with pytest.raises(ValueError, match="padding"):
        zero_phase_filter_channels(sos, np.zeros((2, pad_length(sos))))


@pytest.mark.parametrize("channels", [1, 3, 6, 9, 16, 17, 40])
def test_c_and_numba_filters_agree_bit_for_bit(channels: int, monkeypatch) -> None:
    """Every tile width (the C kernel runs 4, 8 or 16 lanes), strided, reversed, Fortran and
    C-ordered inputs, written into a strided view of a wider output: the C kernel gives the
    numba kernel's bits (and SciPy's to 1e-12)."""
    from ident_framework import c_kernels
    from ident_framework.data.filters import _run_kernel, c_kernel

    if not c_kernels.compiler_found():
        pytest.skip("no C compiler")
    assert c_kernel() is not None
    rng = np.random.default_rng(channels)
    wide = np.cumsum(rng.standard_normal((1201, 2 * channels)), axis=0)
    sos = butterworth_lowpass(5, 12.0, 500.0)
    columns = wide[:, ::2]
    for x in (columns, columns[::-1], np.asfortranarray(columns), np.ascontiguousarray(columns)):
        results = []
        for native in ("1", "0"):
            monkeypatch.setenv(c_kernels.SWITCH, native)
            out = np.full((len(x), 3 * channels), np.nan)
            _run_kernel(sos, x, out[:, 1::3])  # a strided view of a wider array
            assert np.isnan(out[:, ::3]).all() and np.isnan(out[:, 2::3]).all()
            results.append(out[:, 1::3])
        np.testing.assert_array_equal(results[0], results[1])
        reference = signal.sosfiltfilt(sos, x, axis=0)
        assert np.abs(results[0] - reference).max() <= 1e-12 * np.abs(reference).max()


@pytest.mark.parametrize("channels", [1, 4, 6, 8, 16, 18, 20, 40])
@pytest.mark.parametrize("n", [40, 129, 3001])
def test_in_place_filtering_gives_the_same_bits(channels: int, n: int, monkeypatch) -> None:
    """`zero_phase_filter_in_place` on adjacent columns of a wider array (the C kernel then
    filters tiles of 4, 8 or 16 channels where they are, others through its work array):
    the bits of the filter into another array, C or numba; the other columns untouched."""
    from ident_framework import c_kernels
    from ident_framework.data.filters import zero_phase_filter_in_place

    rng = np.random.default_rng(n + channels)
    wide = np.cumsum(rng.standard_normal((n, channels + 3)), axis=0)
    sos = butterworth_lowpass(4, 20.0, 500.0)
    expected = zero_phase_filter(sos, np.ascontiguousarray(wide[:, 1 : 1 + channels]))
    for native in ("1", "0") if c_kernels.compiler_found() else ("0",):
        monkeypatch.setenv(c_kernels.SWITCH, native)
        x = wide.copy()
        zero_phase_filter_in_place(sos, x[:, 1 : 1 + channels])
        np.testing.assert_array_equal(x[:, 1 : 1 + channels], expected)
        np.testing.assert_array_equal(x[:, [0, -2, -1]], wide[:, [0, -2, -1]])


def test_in_place_filtering_of_no_columns_leaves_the_array() -> None:
    """`parallel_filter._filtered_in_place` with no column wanted (friction=none): the columns
    as they were, no error."""
    from ident_framework.data.parallel_filter import _filtered_in_place

    raw = np.arange(24.0).reshape(8, 3)
    out = _filtered_in_place(butterworth_lowpass(4, 20.0, 500.0), raw.copy(), np.array([], int))
    np.testing.assert_array_equal(out, raw)
