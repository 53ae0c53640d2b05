"""Built-in options of the `estimator` config group, one module each (`estimator=rls` is
`rls.py`; `rls_plots.py` draws its outputs)."""
