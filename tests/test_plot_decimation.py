"""The torque plot's reduction of long series to the pixel columns they cover."""

import numpy as np

from ident_framework.reports.plots import decimated


def test_short_series_are_drawn_as_they_are():
    t = np.arange(100.0)
    values = np.random.default_rng(0).normal(size=(100, 2))
    t_out, v_out = decimated(t, values, columns=50)
    assert t_out is t and v_out is values


def test_every_pixel_column_keeps_each_series_extremes_in_time_order():
    rng = np.random.default_rng(1)
    n, columns = 100_003, 700
    t = np.cumsum(rng.uniform(0.5, 1.5, n))
    values = np.cumsum(rng.normal(size=(n, 3)), axis=0)
    values[12_345, 1] = 1e6  # a lone spike must stay visible
    t_out, v_out = decimated(t, values, columns)
    assert len(t_out) <= 2 * 3 * columns + 2 * columns
    assert np.all(np.diff(t_out) > 0)
    assert t_out[0] == t[0] and t_out[-1] == t[-1]
    edges = np.linspace(0, n, columns + 1).astype(int)
    for start, stop in zip(edges[:-1], edges[1:], strict=True):
        inside = (t_out >= t[start]) & (t_out <= t[stop - 1])
        np.testing.assert_array_equal(v_out[inside].max(0), values[start:stop].max(0))
        np.testing.assert_array_equal(v_out[inside].min(0), values[start:stop].min(0))
    assert 1e6 in v_out[:, 1]
