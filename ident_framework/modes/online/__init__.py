"""mode=online: streaming identification beside the robot, with a live web dashboard.

Modules, in the order data flows: `streams` / `rtde_stream` (samples from the simulated robot,
a replayed CSV or a running robot) -> `causal_filter` -> `sample_regressor` ->
`streaming_estimator` (a-priori prediction, RLS update, `sliding_metrics`, `drift`) ->
`publisher` (frames) and `run_files` (online/ in the run directory), `twin_worker` (physically
consistent twin snapshots in a worker process); all of it in `estimator_process`. The web side:
`service` (process orchestration), `service_state`, `client_queues`, `web_app`, `panels`
(the dashboard's panel list) and `static/` (the page, its panels and uPlot). `settings` is the
validated `online:` config section; only `service` and `web_app` import the web stack.
"""
