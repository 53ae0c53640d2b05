"""Built-in options of the `residual` config group, one module or package each: `none.py` and
`bpnn/` (the learner, its settings, its input features, its networks and their training, its
held-out acceptance and trust, its files)."""
