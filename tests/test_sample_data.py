"""The recordings that ship with the package (`sample:NAME`): found by name for the CSV and the
bag reader, the same samples in both formats, an unknown name refused with the list."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from ident_framework.data.csv_log import read_csv_log
from ident_framework.data.samples import resolve_sample, sample_folder, sample_names
from ident_framework.errors import UserError
from ident_framework.model.robot import load_robot


def test_both_readers_list_the_same_samples():
    assert sample_names("csv") == sample_names("rosbag") == ["ident", "validation"]
    size = sum(p.stat().st_size for p in sample_folder().rglob("*") if p.is_file())
    assert size < 6e6  # a few MB in all


def test_a_path_that_is_no_sample_is_left_alone():
    assert resolve_sample("ident.csv", "csv", "source.path") is None
    assert resolve_sample("logs/sample:x.csv", "csv", "source.path") is None


@pytest.mark.parametrize("kind", ["csv", "rosbag"])
def test_an_unknown_sample_names_the_ones_there_are(kind):
    with pytest.raises(UserError) as error:
        resolve_sample("sample:idnet", kind, "validation.path")
    message = str(error.value)
    assert "validation.path=sample:idnet" in message
    assert "sample:ident, sample:validation" in message


def test_the_bag_holds_the_csv_samples():
    pytest.importorskip("rosbags")
    from ident_framework.data.rosbag_log import read_rosbag_log

    robot = load_robot("ur12e")
    names = tuple(robot.joint_names)
    for name in ("ident", "validation"):
        csv = read_csv_log(resolve_sample(f"sample:{name}", "csv", "source.path"), names)
        bag = read_rosbag_log(resolve_sample(f"sample:{name}", "rosbag", "source.path"), names)
        np.testing.assert_allclose(bag.timestamp, csv.timestamp, atol=1e-9)
        for field in ("q", "dq", "tau"):  # the CSV holds 10 significant digits
            np.testing.assert_allclose(getattr(bag, field), getattr(csv, field), rtol=1e-9)
    truth = yaml.safe_load((sample_folder() / "truth.yaml").read_text())
    assert truth["recordings"]["ident"]["samples"] == 5001
    assert truth["truth"]["payload"]["mass_kg"] == 1.5
