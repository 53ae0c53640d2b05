"""Built-in options of the `friction` config group, one module each."""
