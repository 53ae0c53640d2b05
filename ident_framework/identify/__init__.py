"""From preprocessed data to identified parameters, as steps `modes/pipeline.py` calls in
order (friction fit, linear problem and estimation, prediction, metrics, truth); also the
shared recursive least squares, the excitation objective, the result types and the model
selection of `tuning=cv` (`tuning/`)."""
