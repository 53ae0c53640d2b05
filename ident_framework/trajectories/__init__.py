"""Built-in options of the `trajectory` config group, and trajectory files."""
