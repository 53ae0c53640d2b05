"""Fixtures shared by the tests; the helpers they use live in `ident_framework.testing`."""

from __future__ import annotations

import pytest

from ident_framework.testing.cli import run_cli
from ident_framework.testing.known_truth import known_truth_setup


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="module")
def true_setup():
    """(regressor builder, true standard parameters) of the known-truth UR12e."""
    return known_truth_setup()
