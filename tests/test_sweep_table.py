"""The sweep's comparison table: a rank is a rank only where the figures differ."""

from __future__ import annotations

from ident_framework.reports.sweep import _ranks


def test_a_sweep_table_marks_runs_that_read_the_same_as_a_tie():
    """Same validation RMSE and R² to the digits shown: one rank with `=`, not two ranks."""

    def row(rmse, r2, status="ok"):
        return {"status": status, "validation_rmse": rmse, "validation_r2": r2}

    rows = [row(1.89901, 0.99911), row(1.89902, 0.99911), row(2.1, 0.99), row(None, None, "x")]
    assert _ranks(rows) == ["1=", "1=", "3", "4"]
    assert _ranks([row(1.8, 0.99), row(1.9, 0.99)]) == ["1", "2"]
