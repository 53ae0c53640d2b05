"""Fixtures shared by the tests; the helpers they use live in `ident_framework.testing`."""

from __future__ import annotations

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

    monkeypatch.setattr(parallel_filter, "zero_phase_filter_channels", counted)
    return counts


@pytest.fixture(scope="module")
def true_setup():
    """(regressor builder, true standard parameters) of the known-truth UR12e."""
    return known_truth_setup()
