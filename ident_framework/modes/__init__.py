"""What a run does: the identification pipeline, the closed loop, prediction, rehearsal and
the exact distributed identification (the Hydra job, `job.py`, runs the one a config names)."""
