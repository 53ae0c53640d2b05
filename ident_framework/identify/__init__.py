"""From preprocessed data to identified parameters, as named steps that `modes/pipeline.py`
calls in order: the nonlinear friction fit (`friction_fit`), the regressor and the linear
least-squares problem in base parameters (`linear_problem`), estimation (`estimation`),
prediction and residual fusion (`prediction`), metrics (`metrics`), the comparison with a
simulated robot's truth (`truth`) and the physical check (`physical_check`); the twin
write-back is in `twin/`. Also the excitation objective the trajectory search minimises
(`excitation_objective`) and the result types (`result`)."""
