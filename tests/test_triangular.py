"""The triangular factor and solve on numpy's LAPACK (`triangular.py`) against SciPy's."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from scipy.linalg.lapack import dgeqrf

from ident_framework.triangular import qr_r_in_place, qr_r_into, solve_upper, stacked_r


@pytest.mark.parametrize("shape", [(5, 5), (40, 7), (2077, 77)])
def test_qr_r_in_place_is_lapack_dgeqrf(shape):
    a = np.random.default_rng(1).standard_normal(shape)
    expected = np.triu(dgeqrf(np.asfortranarray(a))[0][: shape[1]])
    stacked = np.asfortranarray(a)
    r = qr_r_in_place(stacked)
    np.testing.assert_allclose(r, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    np.testing.assert_allclose(r.T @ r, a.T @ a, rtol=1e-10, atol=1e-9)
    assert np.all(np.tril(r, -1) == 0)


def test_qr_r_in_place_refuses_what_it_would_misread():
    with pytest.raises(ValueError, match="Fortran-ordered"):
        qr_r_in_place(np.zeros((6, 3)))  # C order
    with pytest.raises(ValueError, match="m >= n"):
        qr_r_in_place(np.zeros((2, 3), order="F"))


def test_solve_upper_is_back_substitution():
    rng = np.random.default_rng(2)
    r = np.triu(rng.standard_normal((48, 48))) + 5 * np.eye(48)
    b = rng.standard_normal(48)
    np.testing.assert_allclose(solve_upper(r, b), scipy.linalg.solve_triangular(r, b), rtol=1e-12)
    np.testing.assert_allclose(
        solve_upper(r, np.eye(48)), scipy.linalg.solve_triangular(r, np.eye(48)), rtol=1e-10
    )
    r[10, 10] = 0.0
    with pytest.raises(np.linalg.LinAlgError):
        solve_upper(r, b)


def test_qr_r_into_writes_the_same_factor_over_the_previous_one():
    """The streaming accumulator writes R into its own (n, n) array: the same numbers as
    qr_r_in_place, the strictly lower triangle zero whatever was there before."""
    a = np.random.default_rng(3).standard_normal((300, 12))
    expected = qr_r_in_place(np.asfortranarray(a))
    out = np.full((12, 12), np.nan, order="F")
    qr_r_into(np.asfortranarray(a), out)
    np.testing.assert_array_equal(out, expected)
    assert not np.signbit(out[np.tril_indices(12, -1)]).any()  # +0.0, as np.triu gives


def test_stacked_r_is_the_factor_of_the_stacked_blocks():
    rng = np.random.default_rng(4)
    blocks = [rng.standard_normal((m, 9)) for m in (9, 4, 30)]
    stacked = np.vstack(blocks)
    r = stacked_r(blocks)
    np.testing.assert_array_equal(r, qr_r_in_place(np.asfortranarray(stacked)))
    np.testing.assert_allclose(r.T @ r, stacked.T @ stacked, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(
        np.abs(r), np.abs(np.linalg.qr(stacked, mode="r")), rtol=1e-12, atol=1e-12
    )


def test_stacked_r_of_fewer_rows_than_columns_is_numpys_trapezoid():
    """`linear_problem.stack_factors` goes through stacked_r: with fewer rows than columns it
    gives what it gave before, NumPy's (m, n) upper trapezoid."""
    blocks = [np.random.default_rng(5).standard_normal((m, 9)) for m in (3, 2)]
    expected = np.linalg.qr(np.vstack(blocks), mode="r")
    assert stacked_r(blocks).shape == (5, 9)
    np.testing.assert_array_equal(stacked_r(blocks), expected)
