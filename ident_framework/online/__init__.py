"""mode=online: streaming identification beside the robot, with a live web dashboard.

Data flow, all in `estimator_process`: `streams` / `rtde_stream` -> `causal_filter` ->
`sample_regressor` -> `streaming_estimator` (`estimators`, `sliding_ls`, `sliding_metrics`,
`drift`) -> `publisher` (frames), `run_logs` (files), `twin_schedule` (twin fits in a worker). Web
side: `service`, `service_state`, `client_queues`, `web_app`, `panels` and `static/`; only
`service` and `web_app` import the web stack. Settings: config/online_settings.py.
"""
