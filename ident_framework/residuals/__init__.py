"""Built-in options of the `residual` config group, one module each."""
