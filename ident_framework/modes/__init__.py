"""What a run does: the identification pipeline, the closed loop, prediction, rehearsal, and
the Hydra job that dispatches them."""
