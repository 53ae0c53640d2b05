"""Built-in options of the `estimator` config group, one module each (`estimator=rls` is
`rls.py`; the recursion it runs, shared with the online service, is `identify/recursive.py`)."""
