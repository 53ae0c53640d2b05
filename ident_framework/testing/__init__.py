"""Helpers for tests and studies, not used at run time: the command line in a subprocess
(`cli`), known-truth data, the RTDE emulator and the online service as processes, ROS bags,
the drift study, the model selection's test cases and the package's import graph."""
