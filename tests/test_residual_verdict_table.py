"""The residual learner's verdict table: each column means one thing, so a joint refused on its
worst fold shows that fold's reduction beside the pooled one (issue 27: "81.48" pooled stood
beside "refused: ... 6.1 % worse" with nothing saying the two are different figures)."""

import numpy as np

from ident_framework.reports.summary import acceptance_lines
from ident_framework.residuals.bpnn.acceptance import Fold, judge


def test_refused_joint_shows_its_worst_fold_beside_the_pooled_reduction():
    n = 200
    rng = np.random.default_rng(0)
    target = rng.normal(size=(1, n))  # (joints, samples)
    first = np.zeros((1, n), bool)
    first[:, :150] = True
    second = ~first
    # fold A (150 samples) corrected almost perfectly, fold B made worse: pooled is a gain
    corr_a = np.zeros((1, n))
    corr_a[first] = 0.95 * target[first]
    corr_b = np.zeros((1, n))
    corr_b[second] = -0.5 * target[second]
    folds = [
        Fold(fit=second, held_out=first, kind="region"),
        Fold(fit=first, held_out=second, kind="recording 1"),
    ]
    report = judge(target, [corr_a, corr_b], folds, margin=0.02)
    assert report["accepted"] == [False]
    assert report["held_out_reduction_percent"][0] > 0 > report["worst_fold_reduction_percent"][0]
    assert report["worst_fold"] == ["recording 1"]
    lines = acceptance_lines(["shoulder_pan"], report)
    header, row = lines[1], lines[2]
    assert "pooled" in header and "worst fold" in header
    pooled, worst = row.split()[1:3]
    assert float(pooled) == round(report["held_out_reduction_percent"][0], 2)
    assert float(worst) == round(report["worst_fold_reduction_percent"][0], 2) < 0
    assert "recording 1" in row and "refused" in row
