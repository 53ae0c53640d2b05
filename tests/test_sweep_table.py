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


def test_a_factor_sweep_table_lists_its_parts_and_claims_no_ranking(tmp_path):
    """mode=factor jobs do not validate: comparison.md says what the sweep is, one row per
    part (a failed part included), and how to combine; no 'ranked by validation RMSE'."""
    import json

    from ident_framework.reports.sweep import write_comparison

    for k in range(2):
        job = tmp_path / str(k)
        job.mkdir()
        summary = {"index": k, "count": 3, "source": "long.csv", "rows": [5 * k, 5 * k + 5],
                   "samples": 5, "time_s": [0.01 * k, 0.04], "statistics_file_bytes": 2048,
                   "wall_time_s": 1.5, "peak_memory_mb": 300.0}  # fmt: skip
        (job / "statistics.json").write_text(json.dumps(summary))
    jobs = [(str(k), [f"distributed.part={k}"]) for k in range(3)]
    rows = write_comparison(tmp_path, jobs)
    text = (tmp_path / "comparison.md").read_text()
    assert "ranked by validation RMSE" not in text and "validation_rmse" not in text
    assert text.startswith("# Factor sweep (mode=factor): 2 of 3 parts reduced")
    assert f"mode=combine distributed.inputs=[{tmp_path}]" in text
    assert "| 0 | ok | distributed.part=0 | 0 of 3 | long.csv | 0..5 | 5 |" in text
    assert [row["status"][:6] for row in rows] == ["ok", "ok", "failed"]
    header = (tmp_path / "comparison.csv").read_text().splitlines()[0]
    assert header.startswith("run,status,overrides,part,source,rows,samples")
