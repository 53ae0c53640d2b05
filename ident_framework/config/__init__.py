"""Run configuration: settings dataclasses, the plugin registry, Hydra's search path and the
command-line checks made before a job starts."""
