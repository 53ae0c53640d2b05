"""From preprocessed data to identified parameters, as named steps that `modes/pipeline.py`
calls in order: the nonlinear friction fit (`friction_fit`), the linear least-squares problem
in base parameters and its estimation (`linear_problem`), prediction and residual fusion
(`prediction`), metrics (`metrics`) and the comparison with a simulated robot's truth
(`truth`); the regressor, the base parameters and the physical check are in `model/`, the
twin write-back in `twin/`. Also the recursive least squares that `estimator=rls` and the
online service share (`recursive`), the excitation objective the trajectory search minimises
(`excitation_objective`), the result types (`result`) and the model selection of `tuning=cv`
(`tuning/`)."""
