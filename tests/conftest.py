"""Fixtures shared by the tests; the helpers they use live in `ident_framework.testing`."""

from __future__ import annotations

from pathlib import Path

import pytest

from ident_framework.testing.cli import run_cli
from ident_framework.testing.known_truth import known_truth_setup


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def filtered_batches(monkeypatch) -> list[int]:
    """The channel count of every batch parallel friction filtering filters from now on
    (`data/parallel_filter.py`), in order: the filter itself still runs."""
    import ident_framework.data.parallel_filter as parallel_filter

    counts: list[int] = []
    real = parallel_filter.zero_phase_filter_channels

    def counted(sos, channels):
        counts.append(len(channels))
        return real(sos, channels)

    def counted_in_place(sos, columns):  # (M, c): grid segments, filtered where they are
        counts.append(columns.shape[1])
        return real_in_place(sos, columns)

    real_in_place = parallel_filter.zero_phase_filter_in_place
    monkeypatch.setattr(parallel_filter, "zero_phase_filter_channels", counted)
    monkeypatch.setattr(parallel_filter, "zero_phase_filter_in_place", counted_in_place)
    return counts


@pytest.fixture(params=["C", "numba"])
def kernel_engine(request, monkeypatch) -> str:
    """Each engine of the compiled loops in turn: the C kernels (`c_kernels.py`; skipped
    where no C compiler is found, failed where one is and they do not build) and their numba
    fallback (IDENT_FRAMEWORK_NATIVE=0)."""
    from ident_framework import c_kernels
    from ident_framework.data.filters import c_kernel as filter_kernel
    from ident_framework.model.rigid_body_regressor import c_kernel as regressor_kernel

    if request.param == "numba":
        monkeypatch.setenv(c_kernels.SWITCH, "0")
    else:
        monkeypatch.delenv(c_kernels.SWITCH, raising=False)
        if not c_kernels.compiler_found():
            pytest.skip("no C compiler")
        assert regressor_kernel() is not None and filter_kernel() is not None
    return request.param


@pytest.fixture(scope="module")
def true_setup():
    """(regressor builder, true standard parameters) of the known-truth UR12e."""
    return known_truth_setup()


@pytest.fixture(scope="session")
def ur10e_logs(tmp_path_factory) -> tuple[Path, Path]:
    """A 20 s simulated UR10e excitation and a point-to-point validation motion, as CSV
    (identification, validation)."""
    from ident_framework.data.csv_log import write_csv_log
    from ident_framework.model.robot import load_robot
    from ident_framework.sources.mujoco import MujocoSource, MujocoSourceParams
    from ident_framework.trajectories.fourier import FourierGenerator
    from ident_framework.trajectories.fourier.params import FourierParams
    from ident_framework.trajectories.point_to_point import (
        PointToPointGenerator,
        PointToPointParams,
    )

    folder = tmp_path_factory.mktemp("ur10e_logs")
    robot = load_robot("ur10e")
    source = MujocoSource(MujocoSourceParams(seed=7))
    excitation = FourierGenerator(FourierParams(n_candidates=1, n_refine=0, progress=False))
    write_csv_log(source.acquire(robot, excitation.generate(robot, None, 7)), folder / "ident.csv")
    motion = PointToPointGenerator(PointToPointParams(duration_s=8.0)).generate(robot, None, 8)
    write_csv_log(source.acquire(robot, motion, "validation"), folder / "val.csv")
    return folder / "ident.csv", folder / "val.csv"
