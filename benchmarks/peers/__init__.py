"""Helpers of `benchmarks/bench_peers.py`: data conversion, one scorer, subprocess measurement,
FIGAROH's own venv and drivers. Only `project_io.py` imports ident_framework."""
