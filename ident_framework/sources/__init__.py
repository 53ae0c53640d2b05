"""Built-in options of the `source` and `validation` config groups, one module each."""
