"""From preprocessed data to identified parameters: the linear least-squares problem, the
nonlinear friction fit, the excitation objective, metrics, result types."""
