"""Built-in options of the `estimator` config group, one module each."""
