"""Helpers for tests and studies, not used at run time: the command line in a subprocess
(`cli`), known-truth data (`known_truth`, `multisine`), the RTDE emulator as a process and a
recording control interface (`rtde`), plugin distributions made on the fly
(`distributions`), the drift study (`drift_study`) and the package's import graph
(`import_graph`)."""
