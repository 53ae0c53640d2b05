"""mode=online: streaming identification beside the robot, with a live web dashboard.

Modules, in the order data flows: `session_setup` (source checks, starting parameters, the
stream), `streams` / `rtde_stream` (samples from the simulated robot, a replayed CSV or a
running robot) -> `causal_filter` -> `sample_regressor` -> `streaming_estimator` (a-priori
prediction, per-sample update by one of `estimators` (rls, `sliding_ls`), `sliding_metrics`,
`drift`) -> `publisher` (frames) and `run_logs` (online/ in the run directory; the names are in
reports/run_files.py), `twin_schedule` / `twin_worker` (physically consistent twin snapshots in
a worker process); all of it, and the final parameters.yaml, in `estimator_process`.
The web side: `service` (process orchestration), `service_state`, `client_queues`, `web_app`,
`panels` (the dashboard's panel list) and `static/` (the page, its panels and uPlot). The
validated `online:` config section is config/online_settings.py; only `service` and `web_app`
import the web stack.
"""
