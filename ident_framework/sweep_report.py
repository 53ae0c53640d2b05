"""Compatibility module. `ident_framework.sweep_report.SweepReport` (the Hydra callback of earlier
configs): now `ident_framework.reports.sweep`."""

from ident_framework.reports.sweep import SweepReport

__all__ = ["SweepReport"]
